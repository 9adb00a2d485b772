# LiSa-Go. Every build is CGO_ENABLED=0: the worker must stay static and cgo-free.
export CGO_ENABLED := 0

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -s -w -X main.version=$(VERSION) -X main.commit=$(COMMIT)
# staticcheck is pinned by the tool line in go.mod (no download once the
# modules are cached), built once into .bin and run on both modules.
STATICCHECK := $(CURDIR)/.bin/staticcheck
# FUZZTIME is a count of executions, not a duration: with a duration, Go 1.26's
# fuzz coordinator can fail a target with a bare "context deadline exceeded"
# at the deadline on a loaded machine (golang/go#75804, fixed in Go 1.27).
FUZZTIME ?= 10000x
# FUZZMINTIME bounds the minimisation of each new interesting input (Go's
# default is 60 s each). A target whose inputs wait on timers, such as
# supervisor's FuzzWorkerStream (20 ms stall timeouts), spent minutes of a
# smoke run minimising at 0 executions a second.
FUZZMINTIME ?= 100x

.PHONY: build test test-generic test-purego test-arm64 asm-check fuzz-smoke bench lint

build:
	go build -trimpath -ldflags '$(LDFLAGS)' -o lisa ./cmd/lisa

# GOMLXREF is the gomlx reference forward pass: a module of its own so that
# the lisa binary never links gomlx, hence outside ./... and run explicitly.
GOMLXREF := internal/gomlxref
# KUBECHECK decodes the Kubernetes manifests into the k8s.io/api types: a
# module of its own too, so that lisa never links Kubernetes code.
KUBECHECK := deploy/kubernetes/kubecheck

# test is the project's test command (README and .ci/run use exactly this).
# -timeout 30m: cmd/lisa runs every family, the tools and the chat page
# end to end through real sandboxed servers, minutes on two cores; go
# test's default of 10 minutes per package is too close.
test: lint asm-check
	go test -count=1 -timeout 30m ./...
	cd $(GOMLXREF) && go test -count=1 ./...
	cd $(KUBECHECK) && go test -count=1 ./...
	$(MAKE) test-generic test-purego test-arm64 fuzz-smoke

# test-generic runs the kernels, the model and the gomlx reference on the
# pure-Go kernel table chosen at run time (LISA_KERNELS=generic). The
# llama.cpp comparisons of model/familyref (minutes of 9000-token
# sequences) run on the production kernels only: the generic ones are
# held to those by the kernels' own twin tests.
test-generic:
	LISA_KERNELS=generic go test -count=1 -timeout 20m ./kernels/... $$(go list ./model/... | grep -v /familyref)
	cd $(GOMLXREF) && LISA_KERNELS=generic go test -count=1 ./...

# test-purego builds the kernels without any assembly (the purego tag),
# as on every architecture without assembly of its own.
test-purego:
	go test -count=1 -tags purego ./kernels/... ./quant/...

# QEMU_ARM64 runs arm64 test binaries on an amd64 host: Debian's
# qemu-user-static, which .ci/run installs. It emulates user space only
# (the host kernel serves the system calls), one CPU model per run.
QEMU_ARM64 ?= qemu-aarch64-static
ARM64_TEST := GOARCH=arm64 go test -count=1 -timeout 30m
# ARM64_DOTS are the kernels' twin tests of the arm64 assembly: every path
# the CPU model offers against the pure-Go twins, bit for bit.
ARM64_DOTS := 'Test(NewTypeDots|DotsX8R2|EnvEachPath|DotF32|DotF16|F16Conversions|AxpyF16|DotBF16|Q4KDot|Q6KDot|KDot|Q8_0|QuantDotExtremes|AvailablePaths|Choose|SelectedAvailable|MatMul$$|MatMulTokensEqualSingle)'

# test-arm64 executes the arm64 build under qemu-aarch64: with -cpu max
# (every extension qemu emulates, so the i8mm path and, through the
# tests that try every available path, neon and dotprod) the packages whose
# code differs by architecture or whose results must not (tensor, quant,
# tokenizer, gguf, seccomp, kernels) and model's stories260K references
# (greedy text, teacher-forced logits, the ggml-order emulation) against
# llama.cpp's, and the check (TestNoFusedMultiplyAdd, in kernels too) that
# the fused multiply-adds Go emits on arm64 stay out of the pure-Go float
# paths that must round as amd64. The larger reference models take minutes
# each under emulation. With cortex-a72 (ASIMD without the dot product)
# the kernels' twin tests again, so the neon fallback is what the
# dispatcher picks.
# -short leaves out the whole-model quantizer comparisons and the hostile
# tokenizer inputs (arch-independent, and over ten minutes emulated);
# TestEncodeSpeed, a wall-clock budget, means nothing under emulation.
test-arm64:
	$(ARM64_TEST) -short -skip '^TestEncodeSpeed$$' -exec '$(QEMU_ARM64) -cpu max' ./tensor/... ./quant/... ./tokenizer/... ./gguf/... ./sandbox/seccomp/... ./kernels/...
	$(ARM64_TEST) -exec '$(QEMU_ARM64) -cpu max' -run '^(TestGreedyStories|TestTeacherForced|TestGGMLOrder|TestNoFusedMultiplyAdd)$$/^stories260K.gguf$$' ./model/
	LISA_TEST_BEST=neon $(ARM64_TEST) -exec '$(QEMU_ARM64) -cpu cortex-a72' -run $(ARM64_DOTS) ./kernels/
	LISA_TEST_BEST=dotprod $(ARM64_TEST) -exec '$(QEMU_ARM64) -cpu cortex-a76' -run '^TestEnvEachPath$$' ./kernels/
	set -e; for k in generic neon dotprod i8mm; do \
	  LISA_TEST_BEST=i8mm LISA_KERNELS=$$k $(ARM64_TEST) -exec '$(QEMU_ARM64) -cpu max' -run '^(TestEnvEachPath|TestSelectedAvailable)$$' ./kernels/; \
	done

# asm-check regenerates the avo-generated assembly and fails when it
# differs from what is committed.
asm-check:
	go generate ./kernels/...
	git diff --exit-code -- kernels

# fuzz-smoke runs every fuzz target of both modules for FUZZTIME
# executions.
fuzz-smoke:
	@set -e; for dir in . $(GOMLXREF); do \
	  for pkg in $$(cd $$dir && go list ./...); do \
	    for f in $$(cd $$dir && go test -list '^Fuzz' $$pkg 2>/dev/null | grep '^Fuzz' || true); do \
	      echo "fuzz $$pkg $$f"; (cd $$dir && go test -run '^$$' -fuzz "^$$f$$" -fuzztime $(FUZZTIME) -fuzzminimizetime $(FUZZMINTIME) -timeout 20m $$pkg); \
	    done; \
	  done; \
	done

bench:
	go test -run '^$$' -bench . -benchmem ./kernels/...

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go') ); if [ -n "$$out" ]; then echo "gofmt:"; echo "$$out"; exit 1; fi
	go vet ./...
	GOOS=linux GOARCH=arm64 go build ./...
	GOOS=linux GOARCH=arm64 go vet ./...
	go mod tidy -diff
	go build -o $(STATICCHECK) honnef.co/go/tools/cmd/staticcheck
	$(STATICCHECK) ./...
	cd $(GOMLXREF) && go vet ./... && $(STATICCHECK) ./...
	cd $(KUBECHECK) && go vet ./... && go mod tidy -diff && $(STATICCHECK) ./...
