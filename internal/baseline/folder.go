package baseline

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/aiperf-action/aiperf-action/internal/result"
)

// Folder stores baselines in a directory of the repository.
type Folder struct {
	Root string
	Now  func() time.Time
}

var _ Store = (*Folder)(nil)

func (f *Folder) String() string { return "folder " + f.Root }

// List reads the runs of one scenario and profile.
func (f *Folder) List(ctx context.Context, scenario, hash string) ([]Entry, error) {
	dir := filepath.FromSlash(Dir(f.Root, scenario, hash))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("baseline folder: %w", err)
	}
	var out []Entry
	for _, de := range ents {
		e, ok := parseName(de.Name())
		if !ok || de.IsDir() {
			continue
		}
		p := filepath.Join(dir, de.Name())
		e.load = func(context.Context) ([]byte, error) { return os.ReadFile(p) }
		out = append(out, e)
	}
	sortEntries(out)
	return out, nil
}

// Profiles lists the scenario's profile folders.
func (f *Folder) Profiles(ctx context.Context, scenario string) ([]string, error) {
	dir := filepath.Dir(filepath.FromSlash(Dir(f.Root, scenario, "x")))
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("baseline folder: %w", err)
	}
	var out []string
	for _, de := range ents {
		if de.IsDir() {
			out = append(out, de.Name())
		}
	}
	return out, nil
}

// Append writes each run atomically, then removes the oldest beyond keep.
func (f *Folder) Append(ctx context.Context, scenario, hash, commit string, runs [][]byte, keep int) error {
	now := time.Now
	if f.Now != nil {
		now = f.Now
	}
	dir := filepath.FromSlash(Dir(f.Root, scenario, hash))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("baseline folder: %w", err)
	}
	t := now()
	for i, b := range runs {
		p := filepath.Join(dir, FileName(t, commit, i))
		if err := result.WriteFileAtomic(p, b); err != nil {
			return fmt.Errorf("baseline folder: %w", err)
		}
	}
	es, err := f.List(ctx, scenario, hash)
	if err != nil {
		return err
	}
	for _, e := range trim(es, keep) {
		// Another gate on the same folder may have trimmed it first.
		if err := os.Remove(filepath.Join(dir, e.Name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("baseline folder: %w", err)
		}
	}
	return nil
}
