// Package tensor holds the table of ggml tensor types (block size, bytes
// per block, name) that the GGUF reader, the quantized formats and the
// kernels share, and the row-size arithmetic built on it.
//
// Every size computation here is overflow-checked: shapes come from model
// files, which are hostile input.
package tensor
