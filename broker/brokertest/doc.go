// Package brokertest provides an in-process fake broker.Backend for tests
// of the HTTP layer and for tools that exercise it without a model: it
// streams configurable text, can be slow, can fail, honours cancellation
// and records what it saw.
package brokertest
