// Package hub fetches GGUF models from a Hugging Face hub (or a mirror of
// its API) into a local models directory, for lisa pull and lisa serve -hf.
//
// # Trust
//
// Everything the hub sends is untrusted. A file listing is read as a
// stream with bounds on its bytes, its entries and its pages; every name
// in it is checked (relative, clean, no "..", no backslash or control
// character) before any is used as a path; only ".gguf" files are ever
// downloaded. Requests go to HTTPS only, redirects included; the token
// (HF_TOKEN) is sent to the endpoint's host and, by net/http's rule, never
// to another domain a redirect names. A download is written to a
// ".partial" file beside its destination and renamed into place only
// after its SHA-256 matched the repository's LFS oid (or, for a file kept
// in git rather than LFS, its git blob SHA-1 matched the listed oid); a
// mismatch deletes the partial file. A download larger than the free space
// left is refused before it starts. The digest is then kept in a
// ".sha256" file beside the model (sha256sum's format) so that lisa models
// and lisa serve -hf can pin it without the network.
//
// The bytes are never parsed here: the broker only hashes them, and the
// GGUF is parsed by the sandboxed worker as any other model.
//
// # Layout
//
// A file F of repository OWNER/NAME lives at DIR/OWNER/NAME/F. Repository
// names follow the hub's rules (letters, digits, '-', '_', '.', no "--"
// or ".."), so neither part can climb out of DIR. A pull of a file holds
// an exclusive flock on F.lock for its whole duration, so two pulls of one
// file wait for each other instead of writing the same partial file.
//
// # Choosing a file
//
// REPO:QUANT picks the .gguf whose path holds the quantisation tag QUANT
// (case-insensitive, as a whole word: Q4_K does not match Q4_K_M); a model
// split into "-00001-of-00003.gguf" shards is pulled whole, and the first
// shard is the model's path. REPO/FILE names one file. REPO alone takes the
// repository's only model, or its Q4_K_M. Vision projectors ("mmproj")
// are never picked by a tag.
package hub
