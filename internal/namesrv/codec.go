package namesrv

import (
	"errors"
	"fmt"

	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// Sentinel errors.
var (
	// ErrBadRegistration classes a REGISTER_BROKER / UNREGISTER_BROKER /
	// QUERY_DATA_VERSION request whose ext fields or body cannot be used:
	// bad JSON, a missing broker name or address, a negative queue count,
	// a CRC mismatch, an inflated body over MaxRegistrationBytes.
	ErrBadRegistration = errors.New("namesrv: malformed registration")
	// ErrUnsupported is returned for registrations in a format we do not
	// read (Java's compressed=true body).
	ErrUnsupported = errors.New("namesrv: unsupported registration format")
	// ErrNeedFull is returned by a registrar send when the name server
	// refused a delta and wants a full registration.
	ErrNeedFull = errors.New("namesrv: name server asks for a full registration")
)

// MaxRegistrationBytes bounds the inflated size of a zlib-compressed
// registration body.
const MaxRegistrationBytes = rmq.MaxRegistrationBytes

// Ext field names of Petrel's registration extension (package rmq has the
// codec); a Java broker never sends them and ignores them in answers.
const (
	// ExtDelta ("true") marks a REGISTER_BROKER whose body is a delta.
	ExtDelta = rmq.ExtDelta
	// ExtBaseVersion is the data version (JSON) a delta applies to.
	ExtBaseVersion = rmq.ExtBaseVersion
	// ExtZlib ("true") marks a body compressed with zlib.
	ExtZlib = rmq.ExtZlib
	// ExtNeedFull ("true") in an answer refuses a delta: send a full
	// registration.
	ExtNeedFull = rmq.ExtNeedFull
	// ExtDataVersion in an answer is the data version (JSON) the name
	// server now holds for the broker.
	ExtDataVersion = rmq.ExtDataVersion
	// ExtMasterEpoch is the master epoch (decimal) of a registration in
	// controller mode: the highest epoch's claim to id 0 wins.
	ExtMasterEpoch = rmq.ExtMasterEpoch
)

// bad wraps a decode error of package rmq (whose text names the field)
// in ErrBadRegistration.
func bad(err error) error { return fmt.Errorf("%w: %w", ErrBadRegistration, err) }

// checkTopics keys every topic by its map key (as Java does) and rejects
// empty names and negative counts.
func checkTopics(m map[string]TopicConfig) (map[string]TopicConfig, error) {
	if m == nil {
		m = map[string]TopicConfig{}
	}
	for name, tc := range m {
		if name == "" {
			return nil, fmt.Errorf("%w: empty topic name", ErrBadRegistration)
		}
		if tc.ReadQueueNums < 0 || tc.WriteQueueNums < 0 {
			return nil, fmt.Errorf("%w: topic %q has a negative queue count", ErrBadRegistration, name)
		}
		if tc.TopicName != name {
			tc.TopicName = name
			m[name] = tc
		}
	}
	return m, nil
}

// decodeRegistration turns a REGISTER_BROKER request into a Registration
// (Session left 0). It reads Java's uncompressed JSON body and our delta
// and zlib extensions.
func decodeRegistration(c *remoting.Command) (Registration, error) {
	var r Registration
	h, err := rmq.DecodeRegisterBroker(c)
	if err != nil {
		return r, bad(err)
	}
	r.Broker = brokerID(h.BrokerIdentity)
	r.Addr, r.HAServerAddr = h.BrokerAddr, h.HAServerAddr
	r.MasterEpoch = h.MasterEpoch
	if h.Compressed {
		return r, fmt.Errorf("%w: compressed=true (set the broker's compressedRegister=false)", ErrUnsupported)
	}
	body := c.Body
	if h.BodyCRC32 != 0 {
		if got := rmq.BodyCRC(body); got != h.BodyCRC32 {
			return r, fmt.Errorf("%w: bodyCrc32 %d, body has %d", ErrBadRegistration, h.BodyCRC32, got)
		}
	}
	if h.Zlib {
		if body, err = rmq.Inflate(body, MaxRegistrationBytes); err != nil {
			return r, bad(err)
		}
	}
	if h.Delta {
		r.Delta, r.BaseVersion = true, h.BaseVersion
		d, err := rmq.DecodeDeltaRegisterBody(body)
		if err != nil {
			return r, bad(err)
		}
		for _, name := range d.RemovedTopics {
			if name == "" {
				return r, fmt.Errorf("%w: empty removed topic name", ErrBadRegistration)
			}
		}
		r.Version, r.Removed = d.DataVersion, d.RemovedTopics
		r.Topics, err = checkTopics(d.TopicConfigTable)
		return r, err
	}
	if len(body) == 0 {
		// Java brokers always send a body; accept an empty one as "no topics".
		r.Topics = map[string]TopicConfig{}
		return r, nil
	}
	b, err := rmq.DecodeRegisterBrokerBody(body)
	if err != nil {
		return r, bad(err)
	}
	r.Version = b.Wrapper.DataVersion
	r.Topics, err = checkTopics(b.Wrapper.TopicConfigTable)
	return r, err
}

func brokerID(id rmq.BrokerIdentity) BrokerID {
	return BrokerID{Cluster: id.ClusterName, Name: id.BrokerName, ID: id.BrokerID}
}
