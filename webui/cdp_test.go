package webui

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
)

// A minimal Chrome DevTools Protocol client for the page's browser test:
// a WebSocket client (RFC 6455, client side: masked frames out, text and
// control frames in) and JSON-RPC calls over it. Test code only; the
// standard library suffices, so no dependency is added for it.

// wsGUID is the fixed GUID of the WebSocket handshake (RFC 6455 §1.3).
const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

// maxWSMessage bounds one message from the browser (a screenshot is the
// largest).
const maxWSMessage = 64 << 20

// wsConn is a client WebSocket connection.
type wsConn struct {
	c  net.Conn
	br *bufio.Reader
}

// dialWS opens a WebSocket to a ws:// URL.
func dialWS(rawURL string, timeout time.Duration) (*wsConn, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "ws" {
		return nil, fmt.Errorf("websocket URL %q: want ws://", rawURL)
	}
	c, err := net.DialTimeout("tcp", u.Host, timeout)
	if err != nil {
		return nil, err
	}
	var k [16]byte
	if _, err := rand.Read(k[:]); err != nil {
		c.Close()
		return nil, err
	}
	key := base64.StdEncoding.EncodeToString(k[:])
	req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" +
		"Sec-WebSocket-Key: " + key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	_ = c.SetDeadline(time.Now().Add(timeout))
	if _, err := io.WriteString(c, req); err != nil {
		c.Close()
		return nil, err
	}
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("websocket handshake: %w", err)
	}
	resp.Body.Close()
	sum := sha1.Sum([]byte(key + wsGUID))
	if resp.StatusCode != http.StatusSwitchingProtocols ||
		resp.Header.Get("Sec-WebSocket-Accept") != base64.StdEncoding.EncodeToString(sum[:]) {
		c.Close()
		return nil, fmt.Errorf("websocket handshake: %s, accept %q", resp.Status, resp.Header.Get("Sec-WebSocket-Accept"))
	}
	_ = c.SetDeadline(time.Time{})
	return &wsConn{c: c, br: br}, nil
}

// writeFrame writes one masked frame of opcode op.
func (w *wsConn) writeFrame(op byte, p []byte) error {
	h := []byte{0x80 | op}
	switch n := len(p); {
	case n < 126:
		h = append(h, 0x80|byte(n))
	case n < 1<<16:
		h = append(h, 0x80|126, byte(n>>8), byte(n))
	default:
		h = append(h, 0x80|127)
		h = binary.BigEndian.AppendUint64(h, uint64(n))
	}
	var mask [4]byte
	if _, err := rand.Read(mask[:]); err != nil {
		return err
	}
	h = append(h, mask[:]...)
	buf := make([]byte, len(p))
	for i := range p {
		buf[i] = p[i] ^ mask[i%4]
	}
	_, err := w.c.Write(append(h, buf...))
	return err
}

// readMessage returns the next text message, answering pings on the way.
func (w *wsConn) readMessage(deadline time.Time) ([]byte, error) {
	_ = w.c.SetReadDeadline(deadline)
	var msg []byte
	for {
		var h [2]byte
		if _, err := io.ReadFull(w.br, h[:]); err != nil {
			return nil, err
		}
		fin, op := h[0]&0x80 != 0, h[0]&0x0f
		if h[1]&0x80 != 0 {
			return nil, errors.New("websocket: masked frame from the server")
		}
		n := uint64(h[1] & 0x7f)
		switch n {
		case 126:
			var b [2]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = uint64(binary.BigEndian.Uint16(b[:]))
		case 127:
			var b [8]byte
			if _, err := io.ReadFull(w.br, b[:]); err != nil {
				return nil, err
			}
			n = binary.BigEndian.Uint64(b[:])
		}
		if n > maxWSMessage || uint64(len(msg))+n > maxWSMessage {
			return nil, fmt.Errorf("websocket: message over %d bytes", maxWSMessage)
		}
		p := make([]byte, n)
		if _, err := io.ReadFull(w.br, p); err != nil {
			return nil, err
		}
		switch op {
		case 0x8:
			return nil, errors.New("websocket: closed by the browser")
		case 0x9:
			if err := w.writeFrame(0xA, p); err != nil {
				return nil, err
			}
			continue
		case 0xA:
			continue
		case 0x1, 0x0:
			msg = append(msg, p...)
			if fin {
				return msg, nil
			}
		default:
			return nil, fmt.Errorf("websocket: opcode %#x", op)
		}
	}
}

// cdp is a DevTools session: calls go to the page's session once attached.
type cdp struct {
	ws      *wsConn
	nextID  int
	session string
	events  []cdpEvent // every event seen, in order
	timeout time.Duration
}

type cdpEvent struct {
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

// call sends method with params and returns its result; events that
// arrive meanwhile are kept in c.events.
func (c *cdp) call(method string, params any, result any) error {
	c.nextID++
	id := c.nextID
	req := map[string]any{"id": id, "method": method, "params": params}
	if c.session != "" {
		req["sessionId"] = c.session
	}
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	if err := c.ws.writeFrame(0x1, b); err != nil {
		return err
	}
	deadline := time.Now().Add(c.timeout)
	for {
		m, err := c.ws.readMessage(deadline)
		if err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		var r struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
			cdpEvent
		}
		if err := json.Unmarshal(m, &r); err != nil {
			return fmt.Errorf("%s: %w", method, err)
		}
		if r.ID == 0 {
			c.events = append(c.events, r.cdpEvent)
			continue
		}
		if r.ID != id {
			continue
		}
		if r.Error != nil {
			return fmt.Errorf("%s: %s", method, r.Error.Message)
		}
		if result == nil {
			return nil
		}
		return json.Unmarshal(r.Result, result)
	}
}

// eval evaluates a JavaScript expression in the page and decodes its
// value (returned by value) into out.
func (c *cdp) eval(expr string, out any) error {
	var r struct {
		Result struct {
			Value json.RawMessage `json:"value"`
		} `json:"result"`
		ExceptionDetails *struct {
			Text      string `json:"text"`
			Exception struct {
				Description string `json:"description"`
			} `json:"exception"`
		} `json:"exceptionDetails"`
	}
	if err := c.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true, "awaitPromise": true}, &r); err != nil {
		return err
	}
	if r.ExceptionDetails != nil {
		return fmt.Errorf("evaluate %q: %s %s", expr, r.ExceptionDetails.Text, r.ExceptionDetails.Exception.Description)
	}
	if out == nil {
		return nil
	}
	if len(bytes.TrimSpace(r.Result.Value)) == 0 {
		return fmt.Errorf("evaluate %q: no value", expr)
	}
	return json.Unmarshal(r.Result.Value, out)
}

// problems returns the console errors, exceptions and CSP reports among
// the events seen (but the 401 answers of calls made without a key).
func (c *cdp) problems(expected ...string) []string {
	var out []string
	for _, e := range c.events {
		switch e.Method {
		case "Runtime.exceptionThrown":
			out = append(out, "exception: "+string(e.Params))
		case "Log.entryAdded", "Runtime.consoleAPICalled":
			s := string(e.Params)
			if strings.Contains(s, `"source":"network"`) && slices.ContainsFunc(expected, func(x string) bool { return strings.Contains(s, x) }) {
				continue // an error answer the test asked for
			}
			if strings.Contains(s, `"level":"error"`) || strings.Contains(s, `"type":"error"`) ||
				strings.Contains(s, "Content Security Policy") {
				out = append(out, e.Method+": "+s)
			}
		}
	}
	return out
}
