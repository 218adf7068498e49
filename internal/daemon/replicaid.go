package daemon

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"github.com/petrelmq/petrel/internal/vfs"
)

// replicaIDFile is where, under the data directory's ha/ directory, a
// broker in controller mode keeps the replica id the controller assigned
// it on its first start: a replica is identified by it, never by its
// address, which changes in containers.
const replicaIDFile = "replica-id"

// replicaIDVersion is the version of the file's format.
const replicaIDVersion = 1

// maxReplicaIDFile bounds what readReplicaID reads (the file is ~60 bytes).
const maxReplicaIDFile = 4 << 10

// replicaIDRecord is the file's content (JSON).
type replicaIDRecord struct {
	Version   int    `json:"version"`
	Cluster   string `json:"cluster"`
	Group     string `json:"group"`
	ReplicaID int64  `json:"replicaId"` // 0: none assigned yet (only the token)
	// Token is written before the first Register and sent with it: a
	// retry of a Register whose answer was lost gets the same id.
	Token string `json:"token,omitempty"`
}

// readReplicaID returns the persisted replica id of group (0 when none has
// been assigned yet) and the registration token ("" when there is no file).
func readReplicaID(fsys vfs.FS, p, group string) (int64, string, error) {
	f, err := fsys.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("broker: read the replica id %s: %w", p, err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return 0, "", fmt.Errorf("broker: read the replica id %s: %w", p, err)
	}
	if size > maxReplicaIDFile {
		return 0, "", fmt.Errorf("broker: the replica id file %s holds %d bytes, more than the %d it can: it is not Petrel's", p, size, maxReplicaIDFile)
	}
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return 0, "", fmt.Errorf("broker: read the replica id %s: %w", p, err)
	}
	var r replicaIDRecord
	if err := json.Unmarshal(buf, &r); err != nil {
		return 0, "", fmt.Errorf("broker: the replica id file %s is damaged (%v); if this data dir's replica is gone from the controller, move the file away to register as a new replica", p, err)
	}
	switch {
	case r.Version != replicaIDVersion:
		return 0, "", fmt.Errorf("broker: the replica id file %s has version %d; this Petrel reads version %d", p, r.Version, replicaIDVersion)
	case r.ReplicaID < 0 || r.ReplicaID == 0 && r.Token == "":
		return 0, "", fmt.Errorf("broker: the replica id file %s holds replica id %d and no token; ids start at 1", p, r.ReplicaID)
	case r.Group != group:
		return 0, "", fmt.Errorf("broker: the data dir holds replica %d of broker group %q, not of --broker-name %q", r.ReplicaID, r.Group, group)
	}
	return r.ReplicaID, r.Token, nil
}

// writeReplicaID persists id and token durably and atomically: a crash
// leaves the old file or the new one, never a torn one.
func writeReplicaID(fsys vfs.FS, p, cluster, group string, id int64, token string) error {
	b, err := json.Marshal(replicaIDRecord{Version: replicaIDVersion, Cluster: cluster, Group: group, ReplicaID: id, Token: token})
	if err != nil {
		return err
	}
	tmp := p + ".tmp"
	f, err := fsys.Create(tmp)
	if err != nil {
		return fmt.Errorf("broker: write the replica id: %w", err)
	}
	if _, err := f.WriteAt(append(b, '\n'), 0); err != nil {
		f.Close()
		return fmt.Errorf("broker: write the replica id: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("broker: write the replica id: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("broker: write the replica id: %w", err)
	}
	if err := fsys.Rename(tmp, p); err != nil {
		return fmt.Errorf("broker: write the replica id: %w", err)
	}
	if err := fsys.SyncDir(path.Dir(p)); err != nil {
		return fmt.Errorf("broker: write the replica id: %w", err)
	}
	return nil
}

// newReplicaToken is a random registration token (128 bits, hex).
func newReplicaToken() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("broker: a registration token: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}
