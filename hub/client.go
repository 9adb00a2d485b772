package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// DefaultEndpoint is the hub used when HF_ENDPOINT is not set.
const DefaultEndpoint = "https://huggingface.co"

// Environment variables read by FromEnv.
const (
	EnvToken    = "HF_TOKEN"
	EnvEndpoint = "HF_ENDPOINT"
)

const (
	maxRedirects  = 10
	maxPages      = 200 // pages of one listing
	headerTimeout = 60 * time.Second
	// DefaultStall is how long a download may receive nothing before it is
	// abandoned (and resumed, while attempts remain).
	DefaultStall = 60 * time.Second
)

// Errors a caller acts on.
var (
	// ErrAuth: the hub answered 401 or 403 (a gated or private repository).
	ErrAuth = errors.New("access denied")
	// ErrInsecure: an endpoint or a redirect that is not HTTPS.
	ErrInsecure = errors.New("not HTTPS")
)

// Client talks to one hub endpoint. Its methods are safe for concurrent
// use.
type Client struct {
	endpoint *url.URL
	token    string
	http     *http.Client
	stall    time.Duration
}

// Options configure NewClient.
type Options struct {
	// Endpoint is the hub's base URL; it must be https. "" is DefaultEndpoint.
	Endpoint string
	// Token, when set, is sent as a bearer token to the endpoint's host.
	Token string
	// Transport carries the requests; nil is a clone of
	// http.DefaultTransport, which takes proxies from the environment
	// (HTTPS_PROXY, NO_PROXY). Tests pass a transport that trusts their
	// server's certificate. The HTTPS-only redirect policy applies to
	// whatever transport is given.
	Transport http.RoundTripper
	// Stall is how long a download may receive nothing; 0 is DefaultStall.
	Stall time.Duration
}

// NewClient returns a client for o.Endpoint.
func NewClient(o Options) (*Client, error) {
	ep := o.Endpoint
	if ep == "" {
		ep = DefaultEndpoint
	}
	u, err := url.Parse(strings.TrimRight(ep, "/"))
	if err != nil {
		return nil, fmt.Errorf("hub endpoint %q: %w", ep, err)
	}
	if u.Scheme != "https" || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("%w: hub endpoint %q: want https://HOST[/PATH]", ErrInsecure, ep)
	}
	if strings.ContainsFunc(o.Token, func(r rune) bool { return r <= ' ' || r >= 0x7f }) {
		return nil, fmt.Errorf("%s holds a space or a character that is not printable ASCII", EnvToken)
	}
	rt := o.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.ResponseHeaderTimeout = headerTimeout
		rt = t
	}
	stall := o.Stall
	if stall <= 0 {
		stall = DefaultStall
	}
	c := &Client{endpoint: u, token: o.Token, stall: stall}
	c.http = &http.Client{Transport: rt, CheckRedirect: checkRedirect}
	return c, nil
}

// FromEnv returns a client configured by HF_ENDPOINT and HF_TOKEN, read
// with getenv (os.Getenv), and proxies from the environment.
func FromEnv(getenv func(string) string) (*Client, error) {
	return NewClient(Options{Endpoint: getenv(EnvEndpoint), Token: strings.TrimSpace(getenv(EnvToken))})
}

// checkRedirect follows at most maxRedirects redirects, each to HTTPS.
// net/http drops the Authorization header itself when a redirect leaves
// the endpoint's domain.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return fmt.Errorf("more than %d redirects", maxRedirects)
	}
	if req.URL.Scheme != "https" {
		return fmt.Errorf("%w: redirect to %s://%s refused", ErrInsecure, req.URL.Scheme, req.URL.Host)
	}
	return nil
}

// Endpoint returns the hub's base URL.
func (c *Client) Endpoint() string { return c.endpoint.String() }

// get sends a GET for u with the token, the range start when from > 0,
// and returns the response when its status is want (or 206/200 for a
// range); other answers become errors naming what was asked.
func (c *Client) get(ctx context.Context, u, what string, from int64) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	req.Header.Set("User-Agent", "lisa")
	// Identity: a transparently decompressed body would not match the
	// listed size or a byte range.
	req.Header.Set("Accept-Encoding", "identity")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if from > 0 {
		req.Header.Set("Range", fmt.Sprintf("bytes=%d-", from))
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	switch resp.StatusCode {
	case http.StatusOK, http.StatusPartialContent, http.StatusRequestedRangeNotSatisfiable:
		return resp, nil
	}
	drain(resp)
	switch resp.StatusCode {
	case http.StatusUnauthorized, http.StatusForbidden:
		if c.token == "" {
			// The hub answers 401 for a repository that does not exist
			// too, so as not to reveal private ones.
			return nil, fmt.Errorf("%w: %s: %s: no such repository, or a gated or private one: check the name, or set %s to an access token of an account that was granted access",
				ErrAuth, what, resp.Status, EnvToken)
		}
		return nil, fmt.Errorf("%w: %s: %s: the token in %s does not give access to it (accept the repository's terms on its page, or use another token)",
			ErrAuth, what, resp.Status, EnvToken)
	case http.StatusNotFound:
		return nil, fmt.Errorf("%w: %s: %s (check the repository and file names)", ErrNotFound, what, resp.Status)
	}
	return nil, &StatusError{What: what, Code: resp.StatusCode}
}

// StatusError is an answer of the hub with an unexpected HTTP status.
type StatusError struct {
	What string // what was asked, such as "list OWNER/NAME"
	Code int
}

// Error names the request and the status.
func (e *StatusError) Error() string {
	return fmt.Sprintf("%s: hub answered %d %s", e.What, e.Code, http.StatusText(e.Code))
}

// drain reads a little of an unwanted body so the connection can be
// reused, then closes it.
func drain(resp *http.Response) {
	_, _ = io.CopyN(io.Discard, resp.Body, 4<<10)
	resp.Body.Close()
}

// List returns the .gguf files of repo at revision (usually "main"),
// following the listing's pages.
func (c *Client) List(ctx context.Context, repo, revision string) ([]File, error) {
	if err := CheckRepo(repo); err != nil {
		return nil, err
	}
	u := c.endpoint.JoinPath(escape("api/models/" + repo + "/tree/" + revision)...)
	u.RawQuery = "recursive=true"
	next := u.String()
	var files []File
	seen := map[string]bool{}
	entries := 0
	for page := 0; next != ""; page++ {
		if page == maxPages {
			return nil, fmt.Errorf("%w: %s: more than %d pages", ErrListing, repo, maxPages)
		}
		resp, err := c.get(ctx, next, "list "+repo, 0)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode != http.StatusOK {
			drain(resp)
			return nil, &StatusError{What: "list " + repo, Code: resp.StatusCode}
		}
		got, n, err := decodeListing(resp.Body, maxListingEntries-entries, seen)
		link := resp.Header.Get("Link")
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", repo, err)
		}
		entries += n
		files = append(files, got...)
		if next, err = c.nextPage(link); err != nil {
			return nil, fmt.Errorf("list %s: %w", repo, err)
		}
	}
	return files, nil
}

// nextPage returns the rel="next" URL of a Link header, refusing one that
// leaves the endpoint (a listing must not send us elsewhere).
func (c *Client) nextPage(link string) (string, error) {
	if len(link) > 8<<10 {
		return "", fmt.Errorf("%w: Link header longer than 8 KiB", ErrListing)
	}
	for _, part := range strings.Split(link, ",") {
		target, params, ok := strings.Cut(strings.TrimSpace(part), ";")
		if !ok || !strings.Contains(strings.ReplaceAll(params, " ", ""), `rel="next"`) {
			continue
		}
		target = strings.TrimSpace(target)
		if !strings.HasPrefix(target, "<") || !strings.HasSuffix(target, ">") {
			return "", fmt.Errorf("%w: malformed Link header", ErrListing)
		}
		u, err := c.endpoint.Parse(target[1 : len(target)-1])
		if err != nil {
			return "", fmt.Errorf("%w: Link header: %v", ErrListing, err)
		}
		if u.Scheme != c.endpoint.Scheme || u.Host != c.endpoint.Host {
			return "", fmt.Errorf("%w: next page at %s://%s, not the endpoint", ErrListing, u.Scheme, u.Host)
		}
		return u.String(), nil
	}
	return "", nil
}

// resolveURL is where the hub serves file p of repo at revision; for an
// LFS file it redirects to its storage.
func (c *Client) resolveURL(repo, revision, p string) string {
	return c.endpoint.JoinPath(escape(repo + "/resolve/" + revision + "/" + p)...).String()
}

// escape splits a slash-separated path into escaped segments for
// url.URL.JoinPath, which takes its arguments as already escaped: a file
// named "a%2Fb" must stay one segment.
func escape(p string) []string {
	segs := strings.Split(p, "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return segs
}
