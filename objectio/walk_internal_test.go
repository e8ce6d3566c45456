package objectio

import (
	"errors"
	"fmt"
	"hash/fnv"
	"io/fs"
	"math/rand/v2"
	"slices"
	"testing"
	"testing/fstest"
)

// failingFS fails the listing of the directories in bad.
type failingFS struct {
	fstest.MapFS
	bad map[string]bool
}

var errListing = errors.New("listing refused")

func (f failingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	if f.bad[name] {
		return nil, errListing
	}
	return f.MapFS.ReadDir(name)
}

// walkCalls records every call of fn a walk makes, with fn's answers
// decided by the path (the same for both walks).
func walkCalls(walk func(fs.WalkDirFunc) error, answer func(path string, d fs.DirEntry, err error) error) ([]string, error) {
	var calls []string
	err := walk(func(path string, d fs.DirEntry, err error) error {
		kind := "nil"
		if d != nil {
			kind = fmt.Sprint(d.IsDir())
		}
		calls = append(calls, fmt.Sprintf("%s %s %v", path, kind, err))
		return answer(path, d, err)
	})
	return calls, err
}

// walkDirAhead calls fn exactly as fs.WalkDir does, in the same order,
// over random trees with SkipDir, SkipAll, a returned error and failing
// listings chosen at random; every worker is stopped when it returns.
func TestWalkDirAheadIsFsWalkDir(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for trial := range 200 {
		tree := fstest.MapFS{}
		var dirs []string
		var add func(dir string, depth int)
		add = func(dir string, depth int) {
			for i := range rng.IntN(5) {
				name := fmt.Sprintf("%s/f%d.parquet", dir, i)
				if dir == "." {
					name = fmt.Sprintf("f%d.parquet", i)
				}
				tree[name] = &fstest.MapFile{Data: []byte(name)}
			}
			if depth == 0 {
				return
			}
			for i := range rng.IntN(4) {
				sub := fmt.Sprintf("%s/d%d", dir, i)
				if dir == "." {
					sub = fmt.Sprintf("d%d", i)
				}
				dirs = append(dirs, sub)
				tree[sub+"/keep"] = &fstest.MapFile{}
				add(sub, depth-1)
			}
		}
		add(".", 3)
		bad := map[string]bool{}
		if trial%5 == 4 && len(dirs) > 0 {
			bad[dirs[rng.IntN(len(dirs))]] = true
		}
		fsys := failingFS{tree, bad}
		seed := uint64(trial)
		answer := func(path string, d fs.DirEntry, err error) error {
			h := fnv.New64a()
			_, _ = h.Write([]byte(path))
			switch (h.Sum64() ^ seed) % 40 {
			case 0:
				return fs.SkipDir
			case 1:
				if trial%3 == 0 {
					return fs.SkipAll
				}
			case 2:
				if trial%7 == 0 {
					return fmt.Errorf("stop at %s", path)
				}
			}
			if errors.Is(err, errListing) && trial%2 == 0 {
				return err
			}
			return nil
		}
		root := "."
		if trial%4 == 1 && len(dirs) > 0 {
			root = dirs[0]
		}
		want, wantErr := walkCalls(func(fn fs.WalkDirFunc) error { return fs.WalkDir(fsys, root, fn) }, answer)
		for _, readers := range []int{1, 2, 8} {
			got, gotErr := walkCalls(func(fn fs.WalkDirFunc) error { return walkDirAhead(fsys, root, readers, fn) }, answer)
			if !slices.Equal(got, want) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
				t.Fatalf("trial %d, %d readers, root %s: calls\n%v (%v)\nwant\n%v (%v)", trial, readers, root, got, gotErr, want, wantErr)
			}
		}
	}
	// A root that does not exist is reported to fn, as fs.WalkDir does.
	missing := func(path string, d fs.DirEntry, err error) error { return err }
	want, wantErr := walkCalls(func(fn fs.WalkDirFunc) error { return fs.WalkDir(fstest.MapFS{}, "nope", fn) }, missing)
	got, gotErr := walkCalls(func(fn fs.WalkDirFunc) error { return walkDirAhead(fstest.MapFS{}, "nope", 4, fn) }, missing)
	if !slices.Equal(got, want) || !errors.Is(gotErr, fs.ErrNotExist) || fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("missing root: %v (%v), want %v (%v)", got, gotErr, want, wantErr)
	}
}
