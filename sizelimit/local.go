package sizelimit

import (
	"context"
	"io"
	"net/url"

	iceio "github.com/apache/iceberg-go/io"
)

// LocalFS is iceberg-go's local file IO (every method of it, so the
// interfaces iceberg-go asserts are the same) with Open and ReadFile
// refusing files over the limits.
type LocalFS struct {
	iceio.LocalFS
	Limits Limits
}

// Open checks the file's size, or a Parquet file's footer, then opens it.
func (f LocalFS) Open(name string) (iceio.File, error) {
	file, err := f.LocalFS.Open(name)
	if err != nil {
		return nil, err
	}
	if err := f.check(name, file); err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

func (f LocalFS) check(name string, file iceio.File) error {
	k, ok := KindOf(name)
	if !ok {
		return nil
	}
	st, err := file.Stat()
	if err != nil {
		return nil // the read will say
	}
	if k != ParquetFooter {
		return f.Limits.CheckFile(name, st.Size())
	}
	if st.Size() < 8 {
		return nil
	}
	var last8 [8]byte
	if _, err := file.ReadAt(last8[:], st.Size()-8); err != nil {
		return nil
	}
	return f.Limits.CheckFooter(name, st.Size(), last8[:])
}

// ReadFile reads the file once its size passes, and a compressed
// metadata file once what it decompresses to passes.
func (f LocalFS) ReadFile(name string) ([]byte, error) {
	file, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	data, err := io.ReadAll(file)
	if err != nil {
		return nil, err
	}
	if err := f.Limits.CheckMetadata(name, data); err != nil {
		return nil, err
	}
	return data, nil
}

// The local schemes' FileIO is LocalFS with the catalog properties'
// limits.
func init() {
	factory := func(_ context.Context, _ *url.URL, props map[string]string) (iceio.IO, error) {
		l, err := FromProperties(props)
		if err != nil {
			return nil, err
		}
		return LocalFS{Limits: l}, nil
	}
	for _, scheme := range []string{"file", ""} {
		iceio.Unregister(scheme)
		iceio.Register(scheme, factory)
	}
}
