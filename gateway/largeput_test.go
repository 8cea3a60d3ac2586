package gateway_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
)

// A large Put Blob and Put Block (on disk written with O_DIRECT,
// backends/disk/direct_linux.go): they answer and store the body's own MD5
// and CRC64 and read back whole, a wrong Content-MD5 is 400 Md5Mismatch
// with nothing stored, and a client that goes away half-way through the
// body leaves neither a blob, nor a temporary file, nor an object.
func TestLargePutBodies(t *testing.T) {
	forEachStore(t, func(t *testing.T, kind string) {
		ctx := context.Background()
		b := setup(t, kind)
		createContainers(t, b.client, "ovl")
		bb := blockClient(b.client, "ovl", "big")

		data := randBytes(5<<20+333, 91)
		sum := md5.Sum(data)
		resp, err := bb.Upload(ctx, streaming.NopCloser(bytes.NewReader(data)), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, err := bb.GetProperties(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(resp.ContentMD5, sum[:]) || !bytes.Equal(p.ContentMD5, sum[:]) {
			t.Fatalf("Put Blob: answered %x, stored %x, want %x", resp.ContentMD5, p.ContentMD5, sum)
		}
		if got := download(t, b.client, "ovl", "big"); !bytes.Equal(got, data) {
			t.Fatalf("read back %d bytes, not the %d written", len(got), len(data))
		}

		// Put Block without Content-MD5 answers the CRC64 of its body.
		block := data[:3<<20]
		sb, err := bb.StageBlock(ctx, "YmxvY2sx", streaming.NopCloser(bytes.NewReader(block)), nil)
		if err != nil {
			t.Fatal(err)
		}
		if want := azureCRC64(block); !bytes.Equal(sb.ContentCRC64, want) {
			t.Fatalf("Put Block: x-ms-content-crc64 %x, want %x", sb.ContentCRC64, want)
		}

		wrong := md5.Sum(data[1:])
		_, err = blockClient(b.client, "ovl", "bad").Upload(ctx, streaming.NopCloser(bytes.NewReader(data)),
			&blockblob.UploadOptions{TransactionalValidation: blob.TransferValidationTypeMD5(wrong[:])})
		wantErr(t, err, 400, "Md5Mismatch")
		_, err = blockClient(b.client, "ovl", "bad").GetProperties(ctx, nil)
		wantErr(t, err, 404, "BlobNotFound")

		objects := b.countObjects(t)
		conn, _ := b.stalledPut(t, "ovl", "gone", 4<<20, 2<<20)
		conn.Close()
		deadline := time.Now().Add(20 * time.Second)
		for {
			_, err = blockClient(b.client, "ovl", "gone").GetProperties(ctx, nil)
			if err == nil {
				t.Fatal("a Put Blob whose client went away half-way stored a blob")
			}
			b.collectAll(t)
			if tmp := b.tempFiles(t); len(tmp) == 0 && b.countObjects(t) == objects {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("client gone: temp files %v, %d objects (%d before)", b.tempFiles(t), b.countObjects(t), objects)
			}
			time.Sleep(50 * time.Millisecond)
		}
		wantErr(t, err, 404, "BlobNotFound")
	})
}
