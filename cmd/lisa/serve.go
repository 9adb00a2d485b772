package main

import (
	"context"
	"errors"
	"flag"
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
)

// runServe is lisa serve: it opens and verifies the model, starts the
// sandboxed worker through the supervisor and serves the OpenAI API until
// SIGINT or SIGTERM.
func runServe(args []string, stdout, stderr io.Writer) int {
	cfg, err := config.Parse(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "lisa serve: %v\n", err)
		return 2
	}
	logger := newLogger(cfg, stderr)
	if err := serve(cfg, logger); err != nil {
		logger.Error("lisa serve: refusing to go on", "err", err)
		return 1
	}
	return 0
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

func serve(cfg *config.Config, logger *slog.Logger) error {
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
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	sup := supervisor.New(supervisor.Config{ModelName: cfg.ModelName, Threads: cfg.Threads, CtxSize: cfg.CtxSize,
		Parallel: cfg.Parallel, Logger: logger, Stderr: stderrLog}, supervisor.SandboxLauncher{Config: sandbox.Config{
		Enabled: cfg.SandboxEnabled, ModelPath: modelPath, Model: model, ShardPaths: shardPaths, Shards: shards, MemoryLimit: cfg.MemoryLimitBytes,
		Cgroup: cfg.SandboxCgroup.Required(), CgroupAuto: cfg.SandboxCgroup.Auto(), SeccompLog: cfg.SandboxSeccompLog, Threads: cfg.Threads, Stderr: stderrLog}})
	defer sup.Close()
	srv, err := broker.NewServer(cfg, sup, logger)
	if err != nil {
		return err
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
