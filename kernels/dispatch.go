package kernels

import (
	"os"

	"github.com/lisa-llm/lisa/quant"
)

// Path names one set of kernel implementations.
type Path string

// The kernel paths, from the most portable to the fastest.
const (
	Generic Path = "generic" // Generic is the pure-Go path, always available.
	AVX2    Path = "avx2"    // AVX2 is the amd64 AVX2+FMA+F16C assembly path.
	AVX512  Path = "avx512"  // AVX512 is the amd64 AVX-512 F/BW/VL+VNNI assembly path.
)

// EnvKernels names the environment variable that forces a kernel path.
const EnvKernels = "LISA_KERNELS"

// table holds one path's implementation of every dispatched kernel. Each
// function assumes its Go caller checked the lengths: w holds exactly the
// blocks x pairs with, and equal-length slices are equal.
type table struct {
	path Path

	dotF32  func(a, b []float32) float32
	dotF32W func(w []byte, x []float32) float32
	dotF16  func(a, b []uint16) float32
	// dotF16Rows sets out[j] to dotF16 of q and the row of len(q) halves
	// at m[j*stride:]; m holds every row.
	dotF16Rows func(out []float32, m []uint16, stride int, q []uint16)
	dotF16W    func(w []byte, x []uint16) float32
	dotBF16    func(w []byte, x []uint16) float32
	dotQ8_0    func(w []byte, x []quant.BlockQ8_0) float32
	dotQ4K     func(w []byte, x []quant.BlockQ8K) float32
	dotQ6K     func(w []byte, x []quant.BlockQ8K) float32

	// Row-run dots, nil on a path without them: out[r] is exactly the
	// one-token dot of weight row r (the r-th len(x) blocks of w) with x,
	// for len(out) rows in one call.
	dotQ4KRows func(w []byte, x []quant.BlockQ8K, out []float32)
	dotQ6KRows func(w []byte, x []quant.BlockQ8K, out []float32)

	// Four- and eight-token dots: x holds four (eight) tokens' nb blocks
	// one after the other; out[t] is exactly a one-token dot with token
	// t: for Q4_K and Q6_K the generic twin's, for Q8_0 the path's own
	// (the avx512 one-token K-quant dots sum in vector lanes and round
	// differently). Every eight-token dot also takes dx, the tokens'
	// block scales as float32 (q80Scales's layout) for the formats that
	// have them in their activation blocks (Q8_0), nil for the others;
	// a kernel that reads the scales from x ignores it.
	dotQ4Kx4 func(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32)
	dotQ6Kx4 func(w []byte, x []quant.BlockQ8K, nb int, out *[4]float32)
	dotQ80x4 func(w []byte, x []quant.BlockQ8_0, nb int, out *[4]float32)
	dotQ80x8 func(w []byte, x []quant.BlockQ8_0, dx []float32, nb int, out *[8]float32)

	// Eight-token K-quant dots, nil on a path without them: x holds eight
	// tokens' nb blocks; out[t] is the one-token dot with token t up to
	// float32 rounding (they sum in vector lanes, in their own order).
	dotQ4Kx8 func(w []byte, x []quant.BlockQ8K, dx []float32, nb int, out *[8]float32)
	dotQ6Kx8 func(w []byte, x []quant.BlockQ8K, dx []float32, nb int, out *[8]float32)

	// The blocked matrix product of F32, F16 and BF16 weights (gemm.go);
	// gemm is nil on a path that keeps the one-row dots for every token
	// count. gemm sets out[r*gemmT+t] to the dot of the first k values of
	// weight row r (at w[r*ldw:]) with those of token t (at x[t*ldx:]),
	// and may prefetch pf, bytes the caller reads next, meanwhile; the
	// widen functions convert len(dst) weights to float32.
	gemm      func(w []float32, ldw int, x []float32, ldx, k int, out *[gemmR * gemmT]float32, pf []byte)
	widenF16  func(dst []float32, w []byte)
	widenBF16 func(dst []float32, w []byte)
	widenF32  func(dst []float32, w []byte)

	// quantQ8K quantizes 256*len(dst) activations to Q8_K blocks, byte
	// for byte as quant.QuantizeRowQ8K.
	quantQ8K func(src []float32, dst []quant.BlockQ8K)

	f16ToF32 func(dst []float32, src []uint16)
	f32ToF16 func(dst []uint16, src []float32)
	axpyF16  func(dst []float32, a float32, v []uint16)

	expSubSum func(x []float32, m float32) float64
	siluMul   func(dst, gate, up []float32)
}

// genericTable is the pure-Go path.
func genericTable() *table {
	return &table{
		path:       Generic,
		dotF32:     dotF32Generic,
		dotF32W:    dotF32WGeneric,
		dotF16:     dotF16Generic,
		dotF16Rows: dotF16RowsGeneric,
		dotF16W:    dotF16WGeneric,
		dotBF16:    dotBF16Generic,
		dotQ8_0:    dotQ8_0Generic,
		dotQ4K:     dotQ4KGeneric,
		dotQ6K:     dotQ6KGeneric,
		dotQ4Kx4:   dotQ4Kx4Generic,
		dotQ6Kx4:   dotQ6Kx4Generic,
		dotQ80x4:   dotQ8_0x4Generic,
		dotQ80x8:   dotQ8_0x8Generic,
		quantQ8K:   quant.QuantizeRowQ8K,
		f16ToF32:   f16ToF32Generic,
		f32ToF16:   f32ToF16Generic,
		axpyF16:    axpyF16Generic,

		gemm:      gemmGeneric,
		widenF16:  widenF16Generic,
		widenBF16: widenBF16Generic,
		widenF32:  widenF32Generic,

		expSubSum: expSubSumGeneric,
		siluMul:   siluMulGeneric,
	}
}

// dispatch is the package's one piece of mutable state: the kernel table
// chosen in init and the reason, for Describe.
var dispatch struct {
	tab  *table
	note string
}

func init() {
	dispatch.tab, dispatch.note = choose(os.Getenv(EnvKernels), detect())
}

// features is what choose needs to know about the CPU.
type features struct {
	avx2   bool // AVX2, FMA and F16C, with OS support for the YMM state
	avx512 bool // AVX-512 F, BW, VL and VNNI, with OS support for the ZMM state
}

// paths returns the paths f supports, generic first.
func (f features) paths() []Path {
	ps := []Path{Generic}
	if f.avx2 && nativeTable(AVX2) != nil {
		ps = append(ps, AVX2)
	}
	if f.avx2 && f.avx512 && nativeTable(AVX512) != nil {
		ps = append(ps, AVX512)
	}
	return ps
}

// choose picks the table for the environment value env on a CPU with
// features f, and says why.
func choose(env string, f features) (*table, string) {
	ps := f.paths()
	best := ps[len(ps)-1]
	if env == "" {
		return tableFor(best), "best for this CPU"
	}
	for _, p := range ps {
		if string(p) == env {
			return tableFor(p), EnvKernels + "=" + env
		}
	}
	switch Path(env) {
	case Generic, AVX2, AVX512:
		return tableFor(best), EnvKernels + "=" + env + " is not supported here; using " + string(best)
	}
	return tableFor(best), EnvKernels + "=" + env + " is not a kernel path (generic, avx2, avx512); using " + string(best)
}

// tableFor returns the table of path p, or the generic one if p has no
// implementation in this build.
func tableFor(p Path) *table {
	if p != Generic {
		if t := nativeTable(p); t != nil {
			return t
		}
	}
	return genericTable()
}

// Selected returns the kernel path in use, chosen once at start-up.
func Selected() Path { return dispatch.tab.path }

// Available returns every kernel path this CPU and build can run, generic
// first and the fastest last.
func Available() []Path { return detect().paths() }

// Describe returns the selected path with the CPU features it uses and,
// when LISA_KERNELS was set or could not be honoured, why it was chosen;
// for example "avx512 (AVX-512 F/BW/VL + VNNI)".
func Describe() string {
	s := string(dispatch.tab.path) + " (" + pathFeatures(dispatch.tab.path) + ")"
	if dispatch.note != "best for this CPU" {
		s += "; " + dispatch.note
	}
	return s
}

// pathFeatures names the instruction sets path p uses.
func pathFeatures(p Path) string {
	switch p {
	case AVX2:
		return "AVX2 + FMA + F16C"
	case AVX512:
		return "AVX-512 F/BW/VL + VNNI"
	}
	return "pure Go"
}
