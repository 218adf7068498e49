package fsm

// Bounds of the codec.
const (
	MaxCommandBytes  = 64 << 10
	MaxSnapshotBytes = 64 << 20
	MaxGroups        = 10000
	MaxReplicas      = 64
)

// EncodeCommand encodes c.
func EncodeCommand(c Command) ([]byte, error) { return nil, ErrInvalid }

// DecodeCommand decodes a command.
func DecodeCommand(b []byte) (Command, error) { return Command{}, ErrInvalid }

// Snapshot encodes s.
func (s *State) Snapshot() ([]byte, error) { return nil, ErrInvalid }

// Restore decodes a snapshot.
func Restore(b []byte) (*State, error) { return nil, ErrInvalid }
