package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/lisa-llm/lisa/broker"
	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/sandbox"
	"github.com/lisa-llm/lisa/supervisor"
	"github.com/lisa-llm/lisa/webui"
)

// runServe is lisa serve: it opens and verifies the model, starts the
// sandboxed worker through the supervisor and serves the OpenAI API until
// SIGINT or SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) int {
	sa, err := parseServeArgs(args)
	if err != nil {
		return badUsage(stderr, "serve", err.Error())
	}
	if sa.help {
		writeHelp(stdout, "serve", serveFlagSet())
		return 0
	}
	cfg, err := parseServeConfig(sa)
	if err != nil {
		return badUsage(stderr, "serve", err.Error())
	}
	if sa.checkConfig {
		return checkConfig(cfg, stdout, stderr)
	}
	logger := newLogger(cfg, stderr)
	for _, n := range sa.notes {
		logger.Warn(n)
	}
	if err := serve(cfg, serveOptions{webui: sa.webui}, logger); err != nil {
		if cfg.LogFormat == "json" {
			logger.Error("lisa serve: refusing to go on", "err", err)
		} else {
			// One plain line a person reads, not a log record whose
			// quoting escapes the quotes of the message.
			fmt.Fprintf(stderr, "lisa serve: %s\n", printable([]byte(err.Error())))
		}
		return 1
	}
	return 0
}

// checkConfig is lisa serve --check-config: the configuration parsed and
// validated (which config.Parse did), printed as the file keys it
// resolved to, without opening the model or listening.
func checkConfig(cfg *config.Config, stdout, stderr io.Writer) int {
	if cfg.Model == "" && cfg.HF == "" && !cfg.MultiModel() {
		return badUsage(stderr, "serve", "no model: give MODEL.gguf, -m MODEL, --hf OWNER/NAME[:QUANT] or --models-dir DIR")
	}
	for _, w := range cfg.Warnings() {
		fmt.Fprintf(stderr, "warning: %s: %s\n", w.Key, w.Message)
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		fmt.Fprintf(stderr, "lisa serve: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "%s\nconfiguration ok\n", out)
	return 0
}

// serveOptions are lisa serve's settings that are not configuration keys.
type serveOptions struct {
	webui bool // serve the chat page at /
}

func newLogger(cfg *config.Config, w io.Writer) *slog.Logger {
	var level slog.Level
	_ = level.UnmarshalText([]byte(cfg.LogLevel)) // validated by config
	opts := &slog.HandlerOptions{Level: level}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

func serve(cfg *config.Config, opts serveOptions, logger *slog.Logger) error {
	if cfg.MultiModel() {
		return serveMulti(cfg, opts, logger)
	}
	if cfg.HF != "" {
		if err := resolveHF(cfg, logger); err != nil {
			return err
		}
	}
	// The sandbox bind-mounts the model by absolute path; a relative -m
	// is relative to the directory lisa was started in.
	modelPath, err := filepath.Abs(cfg.Model)
	if err != nil {
		return fmt.Errorf("model %q: %w", cfg.Model, err)
	}
	model, err := broker.OpenModel(modelPath, cfg.ModelSHA256)
	if err != nil {
		return err
	}
	defer model.Close()
	// A split model's further shards are opened now too, so a missing
	// one stops lisa before it listens.
	shardPaths, shards, err := broker.OpenShards(modelPath, sandbox.MaxShards)
	if err != nil {
		return err
	}
	defer broker.CloseShards(shards)
	// Every setting that weakens the server is said loudly, once, at start.
	for _, w := range cfg.Warnings() {
		logger.Warn(w.Message, "key", w.Key)
	}
	// The worker's stderr reaches the log rate-limited (untrusted text:
	// slog quotes it); /metrics counts what is dropped.
	stderrLog := supervisor.NewStderrLog(logger)
	defer stderrLog.Close()
	// The model is checked in a sandboxed one-job worker before the
	// server listens: a file that is no model stops here, in one line.
	// Its stderr (the sandbox's warnings, which the serving worker
	// repeats) reaches the log only when the worker failed without
	// saying why: a refused file is the one line of the error.
	var checkStderr bytes.Buffer
	info, err := checkModel(modelPath, cfg.SandboxEnabled, nil, &limitWriter{w: &checkStderr, n: 64 << 10})
	if err != nil {
		var je *jobError
		if cfg.SandboxEnabled && !errors.As(err, &je) {
			_, _ = io.Copy(stderrLog, &checkStderr)
		}
		return fmt.Errorf("model %s: %w", modelPath, err)
	}
	if w := ctxWarning(cfg.CtxSize, info.NCtxTrain); w != "" {
		logger.Warn(w, "key", "ctx_size", "n_ctx_train", info.NCtxTrain)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sup := supervisor.New(supervisor.Config{ModelName: cfg.ModelName, Threads: cfg.Threads, CtxSize: cfg.CtxSize,
		Parallel: cfg.Parallel, CacheTypeK: cfg.CacheTypeK, CacheTypeV: cfg.CacheTypeV, Logger: logger, Stderr: stderrLog}, supervisor.SandboxLauncher{Config: sandbox.Config{
		Enabled: cfg.SandboxEnabled, ModelPath: modelPath, Model: model, ShardPaths: shardPaths, Shards: shards, MemoryLimit: cfg.MemoryLimitBytes,
		Cgroup: cfg.SandboxCgroup.Required(), CgroupAuto: cfg.SandboxCgroup.Auto(), SeccompLog: cfg.SandboxSeccompLog, Threads: cfg.Threads, Stderr: stderrLog}})
	defer sup.Close()
	srv, err := broker.NewServer(cfg, sup, logger)
	if err != nil {
		return err
	}
	if opts.webui {
		srv.MountWebUI(webui.Handler())
		logger.Info("chat page at / (--webui)")
	}
	// Serve at once (/health says "loading"); a worker that cannot start
	// stops the server.
	startErr := make(chan error, 1)
	go func() {
		err := sup.Start(ctx)
		startErr <- err // before stop, so the select below sees it
		if err != nil {
			stop()
		}
	}()
	if err := srv.ListenAndServe(ctx); err != nil {
		return err
	}
	select {
	case err := <-startErr:
		if err != nil && !errors.Is(err, context.Canceled) {
			return fmt.Errorf("worker: %w", err)
		}
	default:
	}
	return nil
}
