package main

import (
	"errors"
	"flag"
	"fmt"
	iofs "io/fs"
	"path/filepath"

	"github.com/icereactor/reactor/deletions"
	"github.com/icereactor/reactor/location"
)

// recordKeyEnv holds record key material itself (a Kubernetes Secret as an
// environment variable), as an alternative to --record-key-file.
const recordKeyEnv = "REACTOR_RECORD_KEY"

// defaultKeyFile is where, under --data-dir, a key is kept when none is
// given.
const defaultKeyFile = "record.key"

// recordFlags are the flags of the deletion rule that every command that
// may delete a table's files shares: the key that signs reactor's records
// in tables' storage and the deletion scope.
type recordFlags struct {
	keyFile *string
	scope   stringList
}

func addRecordFlags(fs *flag.FlagSet) *recordFlags {
	r := &recordFlags{}
	r.keyFile = fs.String("record-key-file", "",
		"`file` of the key that signs reactor's records in tables' storage (pending deletions, intents); every replica and every one-shot expire must share it; empty: "+
			recordKeyEnv+", else <data-dir>/"+defaultKeyFile+" (generated when missing)")
	fs.Var(&r.scope, "deletion-scope", "a `location` (prefix) outside which reactor deletes no table's files; repeatable (default: no bound beyond each table's own roots)")
	return r
}

// deletionScope checks and returns the deletion scope.
func (r *recordFlags) deletionScope() ([]string, error) {
	for _, s := range r.scope {
		if _, err := location.Dir(s); err != nil {
			return nil, usageErrorf("--deletion-scope %q: %w", s, err)
		}
	}
	return r.scope, nil
}

// keys resolves the record keys: --record-key-file, else REACTOR_RECORD_KEY,
// else dataDir's record.key, generated there when missing and create is
// set. With none of these and create unset, nil: the command writes no
// record another process must read (the executor then signs with a key of
// its own). It says where the keys came from.
func (r *recordFlags) keys(dataDir string, create bool, getenv func(string) string) (*deletions.Keyring, string, error) {
	if *r.keyFile != "" {
		k, err := deletions.ReadKeyFile(*r.keyFile)
		if err != nil {
			return nil, "", usageErrorf("--record-key-file: %w", err)
		}
		return k, *r.keyFile, nil
	}
	if v := getenv(recordKeyEnv); v != "" {
		k, err := deletions.ParseKeys([]byte(v))
		if err != nil {
			return nil, "", usageErrorf("%s: %w", recordKeyEnv, err)
		}
		return k, recordKeyEnv, nil
	}
	if dataDir == "" {
		return nil, "", nil
	}
	path := filepath.Join(dataDir, defaultKeyFile)
	k, err := deletions.ReadKeyFile(path)
	if err == nil {
		return k, path, nil
	}
	if !errors.Is(err, iofs.ErrNotExist) {
		return nil, "", fmt.Errorf("record key: %w", err)
	}
	if !create {
		return nil, "", nil
	}
	if k, err = deletions.GenerateKeyFile(path); err != nil {
		return nil, "", fmt.Errorf("record key: %w", err)
	}
	return k, path + " (generated)", nil
}

// dataDirKeys are the record keys kept in dir (generated there when
// missing): the demo's, so that the commands it suggests afterwards, run on
// the directory it kept, read what it wrote.
func dataDirKeys(dir string) (*deletions.Keyring, error) {
	path := filepath.Join(dir, defaultKeyFile)
	k, err := deletions.ReadKeyFile(path)
	if errors.Is(err, iofs.ErrNotExist) {
		k, err = deletions.GenerateKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("record key: %w", err)
	}
	return k, nil
}
