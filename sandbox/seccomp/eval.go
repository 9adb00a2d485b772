package seccomp

import (
	"encoding/binary"
	"fmt"

	"golang.org/x/net/bpf"
)

// Call is one system call as the filter sees it.
type Call struct {
	Nr   int
	Args [6]uint64
	// AuditArch overrides the architecture field when non-zero.
	AuditArch uint32
}

// Evaluate runs the program in golang.org/x/net/bpf's interpreter on c and
// returns the action the kernel would take.
func (p *Program) Evaluate(c Call) (Action, error) {
	vm, err := bpf.NewVM(p.Instructions)
	if err != nil {
		return 0, fmt.Errorf("seccomp: interpreter: %w", err)
	}
	aa := p.Arch.AuditArch
	if c.AuditArch != 0 {
		aa = c.AuditArch
	}
	out, err := vm.Run(seccompData(c, aa))
	if err != nil {
		return 0, fmt.Errorf("seccomp: interpreter: %w", err)
	}
	return Action(uint32(out)), nil
}

// seccompData lays out struct seccomp_data as a little-endian kernel sees
// it, but with every 32-bit word big-endian: the interpreter loads words in
// network byte order, the kernel in native order, so this makes each load
// yield the value the kernel's would.
func seccompData(c Call, auditArch uint32) []byte {
	b := make([]byte, offArgs+6*8)
	binary.BigEndian.PutUint32(b[offNr:], uint32(int32(c.Nr)))
	binary.BigEndian.PutUint32(b[offArch:], auditArch)
	for i, a := range c.Args {
		binary.BigEndian.PutUint32(b[offArgs+8*i:], uint32(a))
		binary.BigEndian.PutUint32(b[offArgs+8*i+4:], uint32(a>>32))
	}
	return b
}
