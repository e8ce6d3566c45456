package main

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"
)

// strayFile is a data file on disk that no snapshot of its table names.
type strayFile struct {
	path    string
	size    int64
	modTime time.Time
}

// strayFiles lists the data files under the table's location that no
// snapshot still in its metadata references: outputs of jobs and writers
// that never committed (and files expiry unlinked, waiting for their
// deletion delay).
func strayFiles(ctx context.Context, tbl *table.Table) ([]strayFile, error) {
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, err
	}
	referenced := map[string]bool{}
	for _, snap := range tbl.Metadata().Snapshots() {
		manifests, err := snap.Manifests(fs)
		if err != nil {
			return nil, fmt.Errorf("snapshot %d: %w", snap.SnapshotID, err)
		}
		for _, m := range manifests {
			entries, err := m.FetchEntries(fs, false)
			if err != nil {
				return nil, fmt.Errorf("manifest %s: %w", m.FilePath(), err)
			}
			for _, e := range entries {
				referenced[localPath(e.DataFile().FilePath())] = true
			}
		}
	}
	dir := filepath.Join(localPath(tbl.Location()), "data")
	var out []strayFile
	err = filepath.WalkDir(dir, func(path string, d iofs.DirEntry, err error) error {
		switch {
		case errors.Is(err, iofs.ErrNotExist):
			return nil
		case err != nil:
			return err
		case d.IsDir() && strings.HasPrefix(d.Name(), ".") && path != dir:
			return filepath.SkipDir
		case !d.Type().IsRegular() || strings.HasPrefix(d.Name(), ".") || referenced[path]:
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // deleted under the walk
		}
		out = append(out, strayFile{path: path, size: info.Size(), modTime: info.ModTime()})
		return nil
	})
	if errors.Is(err, os.ErrNotExist) {
		err = nil
	}
	return out, err
}

// localPath turns file:///x or /x into /x.
func localPath(location string) string {
	if u, err := url.Parse(location); err == nil && u.Scheme == "file" {
		return filepath.Clean(filepath.FromSlash(u.Path))
	}
	return filepath.Clean(location)
}
