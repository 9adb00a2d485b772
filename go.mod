module github.com/lisa-llm/lisa

go 1.26.0

require (
	github.com/elastic/go-seccomp-bpf v1.6.0
	github.com/julienschmidt/httprouter v1.3.0
	github.com/klauspost/cpuid/v2 v2.4.2
	github.com/landlock-lsm/go-landlock v0.11.2
	golang.org/x/net v0.63.0
	golang.org/x/sys v0.50.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/BurntSushi/toml v1.4.1-0.20240526193622-a339e1f7089c // indirect
	golang.org/x/exp/typeparams v0.0.0-20231108232855-2478ac86f678 // indirect
	golang.org/x/mod v0.41.0 // indirect
	golang.org/x/sync v0.23.0 // indirect
	golang.org/x/tools v0.51.0 // indirect
	honnef.co/go/tools v0.8.2 // indirect
	kernel.org/pub/linux/libs/security/libcap/psx v1.2.78 // indirect
)

tool honnef.co/go/tools/cmd/staticcheck
