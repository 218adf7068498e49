package proxy

import (
	"io"
	"net"
	"strconv"
	"testing"
)

// BenchmarkPass measures the pass path: a request/response echo through
// one link, by message size.
func BenchmarkPass(b *testing.B) {
	for _, size := range []int{256, 4 << 10, 64 << 10} {
		b.Run(byteSize(size), func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				defer c.Close()
				io.Copy(c, c)
			}()
			n := NewNet(nil)
			defer n.Close()
			c, err := n.Dial(b.Context(), "bench", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			msg := make([]byte, size)
			back := make([]byte, size)
			b.SetBytes(int64(size))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.Write(msg); err != nil {
					b.Fatal(err)
				}
				if _, err := io.ReadFull(c, back); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func byteSize(n int) string {
	switch {
	case n >= 1<<10:
		return strconv.Itoa(n>>10) + "KiB"
	}
	return strconv.Itoa(n) + "B"
}
