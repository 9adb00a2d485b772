package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/gguf"
	"github.com/lisa-llm/lisa/sandbox"
	"github.com/lisa-llm/lisa/supervisor"
	"github.com/lisa-llm/lisa/webui"
)

// maxDirEntries bounds the entries of models_dir read, GGUF or not: a
// directory of millions of files is refused rather than listed.
const maxDirEntries = 1 << 16

// serveModel is one model of a server with several.
type serveModel struct {
	id       string
	path     string // absolute; a split model's first shard
	aliases  []string
	preload  bool
	sha256   string
	memLimit int64 // the worker's memory cap (0: none)
	ctxSize  int   // tokens per slot (0: the model's own)
	parallel int   // generation slots
}

// scanModelsDir lists the models of dir: its regular files named
// *.gguf (a split model by its first shard, named without the shard
// suffix), and symbolic links to such files inside dir. The listing is
// hostile input: hidden files, other file types, links leading out of
// dir, later shards and names that are no model id (config.ValidModelID)
// are skipped with a warning; more than config.MaxModels models or
// maxDirEntries entries is an error. Subdirectories are not searched.
func scanModelsDir(dir string, logger *slog.Logger) ([]serveModel, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("models_dir %q: %w", dir, err)
	}
	root, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("models_dir: %w", err)
	}
	f, err := os.Open(root)
	if err != nil {
		return nil, fmt.Errorf("models_dir: %w", err)
	}
	defer f.Close()
	var found []serveModel
	names := map[string]string{} // id → file name
	entries := 0
	for {
		batch, err := f.ReadDir(256)
		for _, e := range batch {
			if entries++; entries > maxDirEntries {
				return nil, fmt.Errorf("models_dir %s: more than %d entries; give the models in a directory of their own", root, maxDirEntries)
			}
			m, why := dirModel(root, e)
			if why != "" {
				if why != "-" {
					logger.Warn("models_dir: file skipped", "file", e.Name(), "why", why)
				}
				continue
			}
			if found = append(found, m); len(found) > config.MaxModels {
				return nil, fmt.Errorf("models_dir %s: more than %d GGUF models", root, config.MaxModels)
			}
			names[m.path] = e.Name()
		}
		if errors.Is(err, io.EOF) || (err == nil && len(batch) == 0) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("models_dir %s: %w", root, err)
		}
	}
	// Directory order is no order: sorted by file name, the same
	// directory always gives the same models (and the same winner when
	// two files give one id, a.gguf and a.GGUF).
	slices.SortFunc(found, func(a, b serveModel) int { return strings.Compare(a.path, b.path) })
	var out []serveModel
	seen := map[string]string{}
	for _, m := range found {
		if other, dup := seen[m.id]; dup {
			logger.Warn("models_dir: file skipped", "file", names[m.path], "why", fmt.Sprintf("its model id %q is also %s's", m.id, other))
			continue
		}
		seen[m.id] = names[m.path]
		out = append(out, m)
	}
	return out, nil
}

// dirModel checks one entry of models_dir (root, with links resolved):
// the model, or why it is skipped ("-": silently, not a GGUF name).
func dirModel(root string, e fs.DirEntry) (serveModel, string) {
	name := e.Name()
	if !strings.EqualFold(filepath.Ext(name), ".gguf") || strings.HasPrefix(name, ".") {
		return serveModel{}, "-"
	}
	path := filepath.Join(root, name)
	if filepath.Dir(path) != root {
		return serveModel{}, "not a plain file name"
	}
	if _, err := gguf.SplitPaths(path); err != nil {
		return serveModel{}, "-" // a later shard: served with its first
	}
	id := hfModelName(name)
	if !config.ValidModelID(id) {
		return serveModel{}, fmt.Sprintf("%q is not a model id: use 1 to 128 ASCII letters, digits and .-_+: in the file name", id)
	}
	target := path
	if e.Type()&fs.ModeSymlink != 0 {
		t, err := filepath.EvalSymlinks(path)
		if err != nil {
			return serveModel{}, "a symbolic link that cannot be followed"
		}
		if rel, err := filepath.Rel(root, t); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
			return serveModel{}, "a symbolic link to outside models_dir"
		}
		target = t
	} else if !e.Type().IsRegular() {
		return serveModel{}, "not a regular file"
	}
	st, err := os.Stat(target)
	if err != nil || !st.Mode().IsRegular() {
		return serveModel{}, "not a regular file"
	}
	// The path served is the entry's own: a split model's shards are
	// found next to it by name.
	return serveModel{id: id, path: path}, ""
}

// multiModels gathers the models of a server with several: those of
// models_dir, then the models entries, which add a file or refine a
// directory model (by path, or by name without path). The server's
// memory_limit_bytes, ctx_size and parallel are each model's unless its
// entry sets its own.
func multiModels(cfg *config.Config, logger *slog.Logger) ([]serveModel, error) {
	var models []serveModel
	if cfg.ModelsDir != "" {
		var err error
		if models, err = scanModelsDir(cfg.ModelsDir, logger); err != nil {
			return nil, err
		}
	}
	find := func(match func(serveModel) bool) int {
		for i, m := range models {
			if match(m) {
				return i
			}
		}
		return -1
	}
	for i, e := range cfg.Models {
		key := fmt.Sprintf("models[%d]", i)
		var m serveModel
		at := -1
		if e.Path == "" {
			if at = find(func(m serveModel) bool { return m.id == e.Name }); at < 0 {
				return nil, fmt.Errorf("%s: models_dir has no model %q to refine", key, e.Name)
			}
			m = models[at]
		} else {
			p, err := filepath.Abs(e.Path)
			if err != nil {
				return nil, fmt.Errorf("%s.path: %w", key, err)
			}
			m = serveModel{id: hfModelName(filepath.Base(p)), path: p}
			at = find(func(d serveModel) bool { return d.path == p })
		}
		if e.Name != "" {
			m.id = e.Name
		}
		if !config.ValidModelID(m.id) {
			return nil, fmt.Errorf("%s: the file name gives the model id %q, which is not one: set name", key, m.id)
		}
		if j := find(func(d serveModel) bool { return d.id == m.id }); j >= 0 && j != at {
			return nil, fmt.Errorf("%s: the model id %q is also %s's", key, m.id, models[j].path)
		}
		m.aliases, m.preload, m.sha256, m.memLimit = e.Aliases, e.Preload, e.SHA256, e.MemoryLimitBytes
		m.ctxSize, m.parallel = e.CtxSize, e.Parallel
		if at >= 0 {
			models[at] = m
		} else {
			models = append(models, m)
		}
	}
	if len(models) > config.MaxModels {
		return nil, fmt.Errorf("models: %d models, at most %d", len(models), config.MaxModels)
	}
	for i := range models {
		if models[i].memLimit == 0 {
			models[i].memLimit = cfg.MemoryLimitBytes
		}
		if models[i].ctxSize == 0 {
			models[i].ctxSize = cfg.CtxSize
		}
		if models[i].parallel == 0 {
			models[i].parallel = cfg.Parallel
		}
	}
	return models, nil
}

// charge is what m counts against models_memory_bytes before its check
// has run: its worker's memory cap, which the sandbox enforces, or
// without a cap the size of its files (the check adds the KV cache and
// scratch its ctx_size and parallel need).
func (m serveModel) charge() (int64, error) {
	if m.memLimit > 0 {
		return m.memLimit, nil
	}
	return m.filesSize()
}

// filesSize is the size of m's files (a split model's shards together).
func (m serveModel) filesSize() (int64, error) {
	paths, err := gguf.SplitPaths(m.path)
	if err != nil {
		return 0, fmt.Errorf("model %s: %w", m.id, err)
	}
	var n int64
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return 0, fmt.Errorf("model %s: %w", m.id, err)
		}
		n += st.Size()
	}
	return n, nil
}

// identity names the present version of m's files: the device, inode,
// size and modification time of each (a split model's shards, in order).
// A file replaced, rewritten or touched gets another identity, so a
// failed load is tried again once an operator has changed the file.
func (m serveModel) identity() (string, error) {
	paths, err := gguf.SplitPaths(m.path)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, p := range paths {
		st, err := os.Stat(p)
		if err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Base(p), err)
		}
		fmt.Fprintf(&b, "%s %d %d;", fileID(st), st.Size(), st.ModTime().UnixNano())
	}
	return b.String(), nil
}

// check returns the Pool check of m: before the pool evicts anything to
// make room for m, a sandboxed one-job worker parses m's files and plans
// the KV cache and scratch of m's ctx_size and parallel (a plan its
// memory cap cannot hold fails here, with the serving worker's error),
// and the digest, when pinned, is verified. It returns m's charge: its
// memory cap, or without one its files' size, KV cache and scratch.
func (m serveModel) check(cfg *config.Config, logger *slog.Logger) func(context.Context) (int64, error) {
	return func(ctx context.Context) (int64, error) {
		hide := func(err error) error {
			return errors.New(strings.ReplaceAll(err.Error(), filepath.Dir(m.path)+string(filepath.Separator), ""))
		}
		if m.sha256 != "" {
			f, err := broker.OpenModel(m.path, m.sha256)
			if err != nil {
				return 0, hide(err)
			}
			f.Close()
		}
		if err := ctx.Err(); err != nil {
			return 0, err
		}
		// The job cannot be cancelled: past ctx the pool goes on without
		// it, and the job ends on its own (its parse is bounded).
		type result struct {
			info   modelInfo
			err    error
			stderr string
		}
		done := make(chan result, 1)
		go func() {
			var stderr bytes.Buffer
			info, err := checkModel(m.path, cfg.SandboxEnabled, &modelPlan{CtxSize: m.ctxSize, Parallel: m.parallel,
				CacheTypeK: cfg.CacheTypeK, CacheTypeV: cfg.CacheTypeV, Threads: cfg.Threads, MemoryLimit: m.memLimit},
				&limitWriter{w: &stderr, n: 4 << 10})
			done <- result{info, err, stderr.String()}
		}()
		var r result
		select {
		case r = <-done:
		case <-ctx.Done():
			return 0, fmt.Errorf("model check: %w", ctx.Err())
		}
		info, err := r.info, r.err
		if err != nil {
			// The worker's stderr (untrusted; slog quotes it) is logged
			// only when it failed without saying why.
			var je *jobError
			if cfg.SandboxEnabled && !errors.As(err, &je) && r.stderr != "" {
				logger.Warn("model check: the worker's stderr", "model", m.id, "stderr", r.stderr)
			}
			return 0, hide(fmt.Errorf("model check: %w", err))
		}
		if w := ctxWarning(m.ctxSize, info.NCtxTrain); w != "" {
			logger.Warn(w, "model", m.id, "key", "ctx_size", "n_ctx_train", info.NCtxTrain)
		}
		if m.memLimit > 0 {
			return m.memLimit, nil
		}
		size, err := m.filesSize()
		if err != nil {
			return 0, hide(err)
		}
		logger.Info("model checked", "model", m.id, "ctx_size", info.CtxSize, "parallel", info.Parallel,
			"kv_cache_bytes", info.KVCacheBytes, "scratch_bytes", info.ScratchBytes)
		return size + info.KVCacheBytes + info.ScratchBytes, nil
	}
}

// loadedModel is a model's supervisor with the files its workers are
// given; Close ends the worker and closes them.
type loadedModel struct {
	*supervisor.Supervisor
	model  *os.File
	shards []*os.File
	stderr *supervisor.StderrLog
}

func (l *loadedModel) Close() error {
	err := l.Supervisor.Close()
	l.model.Close()
	broker.CloseShards(l.shards)
	l.stderr.Close()
	return err
}

// loader returns the function that loads m in its own sandboxed worker.
// Its errors name the model's file by its base name only: clients see
// them in /v1/models.
func (m serveModel) loader(cfg *config.Config, logger *slog.Logger) func(context.Context) (supervisor.Loaded, error) {
	return func(ctx context.Context) (supervisor.Loaded, error) {
		hide := func(err error) error {
			return errors.New(strings.ReplaceAll(err.Error(), filepath.Dir(m.path)+string(filepath.Separator), ""))
		}
		model, err := broker.OpenModel(m.path, m.sha256)
		if err != nil {
			return nil, hide(err)
		}
		shardPaths, shards, err := broker.OpenShards(m.path, sandbox.MaxShards)
		if err != nil {
			model.Close()
			return nil, hide(err)
		}
		mlog := logger.With("model_id", m.id)
		stderrLog := supervisor.NewStderrLog(mlog)
		sup := supervisor.New(supervisor.Config{ModelName: m.id, Threads: cfg.Threads, CtxSize: m.ctxSize,
			Parallel: m.parallel, CacheTypeK: cfg.CacheTypeK, CacheTypeV: cfg.CacheTypeV, Logger: mlog, Stderr: stderrLog}, supervisor.SandboxLauncher{Config: sandbox.Config{
			Enabled: cfg.SandboxEnabled, ModelPath: m.path, Model: model, ShardPaths: shardPaths, Shards: shards, MemoryLimit: m.memLimit,
			Cgroup: cfg.SandboxCgroup.Required(), CgroupAuto: cfg.SandboxCgroup.Auto(), SeccompLog: cfg.SandboxSeccompLog, Threads: cfg.Threads, Stderr: stderrLog}})
		l := &loadedModel{Supervisor: sup, model: model, shards: shards, stderr: stderrLog}
		if err := sup.Start(ctx); err != nil {
			l.Close()
			return nil, hide(err)
		}
		return l, nil
	}
}

// serveMulti is lisa serve with several models: every model in its own
// sandboxed worker, loaded on first use (or at start with preload) and
// evicted least recently used within models_memory_bytes.
func serveMulti(cfg *config.Config, opts serveOptions, logger *slog.Logger) error {
	models, err := multiModels(cfg, logger)
	if err != nil {
		return err
	}
	if len(models) == 0 {
		return fmt.Errorf("models_dir %s holds no GGUF model (*.gguf) and models lists none", cfg.ModelsDir)
	}
	for _, w := range cfg.Warnings() {
		logger.Warn(w.Message, "key", w.Key)
	}
	pms := make([]supervisor.PoolModel, 0, len(models))
	preload := append([]string(nil), cfg.Preload...)
	ids := make([]string, 0, len(models))
	for _, m := range models {
		charge, err := m.charge()
		if err != nil {
			return err
		}
		pms = append(pms, supervisor.PoolModel{ID: m.id, Aliases: m.aliases, Charge: charge, CtxSize: m.ctxSize, Parallel: m.parallel,
			Identity: m.identity, Check: m.check(cfg, logger), Load: m.loader(cfg, logger)})
		if m.preload {
			preload = append(preload, m.id)
		}
		ids = append(ids, m.id)
	}
	pool, err := supervisor.NewPool(supervisor.PoolConfig{Budget: cfg.ModelsMemoryBytes, LoadTimeout: cfg.ModelLoadTimeout.D(), Logger: logger}, pms)
	if err != nil {
		return err
	}
	defer pool.Close()
	logger.Info("serving several models", "models", strings.Join(ids, ","), "models_memory_bytes", cfg.ModelsMemoryBytes)
	if err := pool.Preload(preload); err != nil {
		return err
	}
	srv, err := broker.NewMultiServer(cfg, pool, logger)
	if err != nil {
		return err
	}
	if opts.webui {
		srv.MountWebUI(webui.Handler())
		logger.Info("chat page at / (--webui)")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return srv.ListenAndServe(ctx)
}
