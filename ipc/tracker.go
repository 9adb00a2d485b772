package ipc

// ReqKind is the kind of request an id was issued for.
type ReqKind uint8

// The request kinds that get replies.
const (
	ReqHello      ReqKind = iota + 1 // answered by Progress…, then Ready or Error
	ReqGenerate                      // answered by Tokens…, then Done or Error
	ReqTokenize                      // answered by Tokenized or Error
	ReqDetokenize                    // answered by Detokenized or Error
	ReqEmbed                         // answered by Embedding or Error
)

// Tracker issues request ids and checks the ids of replies. Ids are issued
// in increasing order from 1, so an id at or below the last one issued that
// is no longer live has finished; no record of finished ids is kept. A
// Tracker is not safe for concurrent use.
type Tracker struct {
	last uint64
	live map[uint64]ReqKind
}

// NewTracker returns a Tracker that has issued no id.
func NewTracker() *Tracker { return &Tracker{live: make(map[uint64]ReqKind)} }

// Issue returns a fresh id for a request of kind k and marks it live.
func (t *Tracker) Issue(k ReqKind) uint64 {
	t.last++
	t.live[t.last] = k
	return t.last
}

// Live returns the number of ids awaiting their final reply.
func (t *Tracker) Live() int { return len(t.live) }

// Kind returns the kind of live id, or 0 when it is not live.
func (t *Tracker) Kind(id uint64) ReqKind { return t.live[id] }

// Check checks reply m against the live ids: its id must have been issued
// and not finished, and its type must answer that id's kind. When m is the
// final reply (anything but Tokens and Progress), the id is finished. It
// returns the id's kind.
func (t *Tracker) Check(m Message) (ReqKind, error) {
	id, typ := m.RequestID(), m.Type()
	k, ok := t.live[id]
	switch {
	case !ok && (id == 0 || id > t.last):
		return 0, violation(KindUnknownID, typ, "id", "id %d was never issued", id)
	case !ok:
		return 0, violation(KindFinishedID, typ, "id", "id %d has already finished", id)
	}
	if !answers(k, typ) {
		return 0, violation(KindOutOfOrder, typ, "id", "%q does not answer request %d", typ, id)
	}
	if typ != TypeTokens && typ != TypeProgress {
		delete(t.live, id)
	}
	return k, nil
}

// Finish ends a live id without a reply (its requester gave up and the
// worker is being replaced).
func (t *Tracker) Finish(id uint64) { delete(t.live, id) }

// answers reports whether a reply of type typ may answer a request of kind k.
func answers(k ReqKind, typ string) bool {
	if typ == TypeError {
		return true
	}
	switch k {
	case ReqHello:
		return typ == TypeReady || typ == TypeProgress
	case ReqGenerate:
		return typ == TypeTokens || typ == TypeDone
	case ReqTokenize:
		return typ == TypeTokenized
	case ReqDetokenize:
		return typ == TypeDetokenized
	case ReqEmbed:
		return typ == TypeEmbedding
	}
	return false
}
