package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path"
	"strings"
	"syscall"
	"time"

	"github.com/lisa-llm/lisa/config"
	"github.com/lisa-llm/lisa/hub"
)

// hfLogEvery is how often lisa serve -hf logs a download's progress.
const hfLogEvery = 10 * time.Second

// resolveHF makes cfg serve cfg.HF: the model already in the models
// directory if it is there, else pulled now (in the broker: the worker
// never touches the network). It sets cfg.Model to the model's (first)
// file, pins cfg.ModelSHA256 to its verified digest, refusing a different
// model_sha256 given by the user, and names the model after its file
// when model_name is unset.
func resolveHF(cfg *config.Config, logger *slog.Logger) error {
	ref, err := hub.ParseRef(cfg.HF)
	if err != nil {
		return fmt.Errorf("hf: %w", err)
	}
	store, err := modelsStore(cfg.ModelsDir)
	if err != nil {
		return err
	}
	l, err := store.Find(ref)
	if err != nil {
		client, err := hub.FromEnv(os.Getenv)
		if err != nil {
			return err
		}
		logger.Info("pulling the model", "hf", ref.String(), "models_dir", store.Dir, "endpoint", client.Endpoint())
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		p := &hub.Puller{Client: client, Store: store, Progress: hfLogger(logger, time.Now)}
		if l, err = p.Pull(ctx, ref); err != nil {
			return fmt.Errorf("hf %s: %w", ref, err)
		}
	}
	want := strings.TrimPrefix(strings.ToLower(cfg.ModelSHA256), config.DigestPrefix)
	if want != "" && want != l.SHA256() {
		return fmt.Errorf("hf %s: model_sha256 is %s but %s has the verified SHA-256 %s", ref, want, l.Name(), l.SHA256())
	}
	cfg.Model, cfg.ModelSHA256 = l.Path(), l.SHA256()
	if cfg.ModelName == "" {
		cfg.ModelName = hfModelName(l.Files[0].File)
	}
	logger.Info("model from the hub", "hf", ref.String(), "file", l.Name(), "path", l.Path(), "shards", len(l.Files), "model_sha256", l.SHA256())
	return nil
}

// hfModelName is the served name of a pulled file: its base name without
// ".gguf" and without a split model's "-00001-of-00003".
func hfModelName(file string) string {
	name := strings.TrimSuffix(path.Base(file), path.Ext(file))
	if i := strings.LastIndex(name, "-of-"); i >= 6 && len(name)-i == 9 && name[i-6] == '-' {
		name = name[:i-6]
	}
	return name
}

// hfLogger returns a progress callback that logs each file's start, its
// progress every hfLogEvery, and its end.
func hfLogger(logger *slog.Logger, now func() time.Time) func(hub.Event) {
	var last time.Time
	return func(e hub.Event) {
		t := now()
		switch {
		case e.Waiting:
			logger.Info("another pull is downloading the file; waiting", "file", e.File)
		case e.Retry != nil:
			logger.Warn("download interrupted; resuming", "file", e.File, "err", e.Retry)
		case e.Finished:
			logger.Info("file verified", "file", e.File, "bytes", e.Total)
		case t.Sub(last) >= hfLogEvery:
			last = t
			logger.Info("downloading", "file", e.File, "of", fmt.Sprintf("%d/%d", e.Index, e.Count), "bytes", e.Done, "total", e.Total)
		}
	}
}
