package wire

import (
	"io"
	"os"

	"github.com/klauspost/compress/gzip"
)

func gunzipTo(src, dst string) error {
	f, err := os.Open(src)
	if err != nil {
		return err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, z); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
