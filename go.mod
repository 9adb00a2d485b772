module github.com/lisa-llm/lisa

go 1.26.0

require (
	github.com/elastic/go-seccomp-bpf v1.6.0 // indirect
	github.com/julienschmidt/httprouter v1.3.0 // indirect
	github.com/klauspost/cpuid/v2 v2.4.2 // indirect
	github.com/landlock-lsm/go-landlock v0.11.2 // indirect
	golang.org/x/net v0.63.0 // indirect
	golang.org/x/sys v0.50.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)
