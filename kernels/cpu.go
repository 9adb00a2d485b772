package kernels

import "github.com/klauspost/cpuid/v2"

// detect reads the CPU's features. cpuid clears the AVX and AVX-512 flags
// when the operating system does not save their register state (XGETBV);
// on arm64 (Linux) it reads the kernel's HWCAP bits, which say what both
// the CPU and the kernel support.
func detect() features {
	c := &cpuid.CPU
	return features{
		avx2: c.Supports(cpuid.AVX, cpuid.AVX2, cpuid.FMA3, cpuid.F16C),
		avx512: c.Supports(cpuid.AVX512F, cpuid.AVX512BW, cpuid.AVX512VL,
			cpuid.AVX512VNNI, cpuid.BMI2),
		neon:    c.Supports(cpuid.ASIMD, cpuid.FP),
		dotprod: c.Supports(cpuid.ASIMDDP),
		i8mm:    c.Supports(cpuid.I8MM),
		fhm:     c.Supports(cpuid.FHM),
		gfni:    c.Supports(cpuid.GFNI),
	}
}
