// Package ipc is the wire protocol between LiSa-Go's broker and its
// sandboxed worker (DESIGN.md §3).
//
// A frame is a 4-byte big-endian length, which excludes itself, followed by
// exactly one JSON object. The length is checked against MaxFrame before
// any memory is allocated for the body. Each object's first member is its
// "type", and every message has an "id"; the messages, their fields and
// their rules are listed in messages.go.
//
// Decoding is strict because the worker is treated as hostile. It is one
// pass over the body that fills the message as it checks it: field names
// must match exactly (no case folding), every field must be known, appear
// once and have its declared JSON type, required fields must be present,
// null is never accepted, numbers must fit their Go type, no data may
// follow the object, and the frame must be valid UTF-8 with no unpaired
// UTF-16 surrogate escapes (which encoding/json would silently replace).
// Every failure is a *ProtocolError naming the rule, the field and the byte
// offset.
//
// Tracker holds the id rules on the broker's side: every request has a
// fresh id, and every reply must name an id that was issued, whose request
// kind matches the reply, and that has not yet seen its final reply.
package ipc
