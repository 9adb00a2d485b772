package kernels

import (
	"os"

	"github.com/lisa-llm/lisa/quant"
	"github.com/lisa-llm/lisa/tensor"
)

// Path names one set of kernel implementations.
type Path string

// The kernel paths, from the most portable to the fastest.
const (
	Generic Path = "generic" // Generic is the pure-Go path, always available.
	AVX2    Path = "avx2"    // AVX2 is the amd64 AVX2+FMA+F16C assembly path.
	AVX512  Path = "avx512"  // AVX512 is the amd64 AVX-512 F/BW/VL+VNNI assembly path.
	NEON    Path = "neon"    // NEON is the arm64 ASIMD (ARMv8.0) assembly path.
	DotProd Path = "dotprod" // DotProd is the arm64 ASIMD + dot-product (SDOT) assembly path.
	I8MM    Path = "i8mm"    // I8MM is the dotprod path plus int8 matrix-multiply (SMMLA) prompt tiles.
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

	// weights holds one row per weight type MatMul multiplies, indexed
	// by type: its activation partner format and its dots on this path
	// (the float types' dots are the fields above).
	weights [tensor.TypeCount]weightKernels

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

	// colTile, softmaxCols, foldCols and widenQ8_0 are ColTile (for a
	// multiple of ColTileRows rows, the shapes checked), SoftmaxCols
	// (n > 0), FoldCols (rows > 0, len(a) > 0) and WidenQ8_0 (whole
	// blocks) in assembly; nil on a path without them (coltile.go).
	colTile     func(c []float32, ldc int, a []float32, lda, ak, mr int, b []float32, ldb, n, k int)
	softmaxCols func(x []float32, ld, rows, n int, mx, sum []float32)
	foldCols    func(o []float32, ldo int, u []float32, ldu, rows int, a, b []float32)
	widenQ8_0   func(dst []float32, src []byte)

	// qtQuant quantizes activations for the tile as qtQuantQ8_0Generic
	// (nil: that one).
	qtQuant func(src []float32, xq []int8, xs []qtScale)

	// quantQ8K quantizes 256*len(dst) activations to Q8_K blocks, byte
	// for byte as quant.QuantizeRowQ8K.
	quantQ8K func(src []float32, dst []quant.BlockQ8K)
	// quantQ8_0 quantizes 32*len(dst) activations to Q8_0 blocks, byte
	// for byte as quant.QuantizeRowQ8_0Act.
	quantQ8_0 func(src []float32, dst []quant.BlockQ8_0)
	// quantQ8_1 does so to Q8_1 blocks, as quant.QuantizeRowQ8_1Act.
	quantQ8_1 func(src []float32, dst []quant.BlockQ8_1)

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
		weights:    genericWeights(),
		quantQ8K:   quant.QuantizeRowQ8K,
		quantQ8_0:  quant.QuantizeRowQ8_0Act,
		quantQ8_1:  quant.QuantizeRowQ8_1Act,
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
	avx2    bool // AVX2, FMA and F16C, with OS support for the YMM state
	avx512  bool // AVX-512 F, BW, VL and VNNI, with OS support for the ZMM state
	neon    bool // arm64 ASIMD (Advanced SIMD) with FP
	dotprod bool // arm64 ASIMDDP: SDOT/UDOT
	i8mm    bool // arm64 I8MM: SMMLA/UMMLA/USMMLA
	fhm     bool // arm64 FHM: FMLAL/FMLSL (half products into float32), no path of its own
	gfni    bool // GFNI (with AVX-512: the 512-bit forms), no path of its own
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
	if f.neon && nativeTable(NEON) != nil {
		ps = append(ps, NEON)
	}
	if f.neon && f.dotprod && nativeTable(DotProd) != nil {
		ps = append(ps, DotProd)
	}
	if f.neon && f.dotprod && f.i8mm && nativeTable(I8MM) != nil {
		ps = append(ps, I8MM)
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
	case Generic, AVX2, AVX512, NEON, DotProd, I8MM:
		return tableFor(best), EnvKernels + "=" + env + " is not supported here; using " + string(best)
	}
	return tableFor(best), EnvKernels + "=" + env + " is not a kernel path (generic, avx2, avx512, neon, dotprod, i8mm); using " + string(best)
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
	case NEON:
		return "arm64 ASIMD"
	case DotProd:
		return "arm64 ASIMD + dot product"
	case I8MM:
		return "arm64 ASIMD + dot product + int8 matrix multiply"
	}
	return "pure Go"
}
