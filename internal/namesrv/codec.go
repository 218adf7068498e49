package namesrv

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"strconv"
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
const MaxRegistrationBytes = 256 << 20

// Ext field names of the registration requests and answers. The petrel*
// names and dataVersion are our extension; a Java broker never sends them
// and ignores them in answers.
const (
	extBrokerName   = "brokerName"
	extBrokerAddr   = "brokerAddr"
	extClusterName  = "clusterName"
	extHAServerAddr = "haServerAddr"
	extBrokerID     = "brokerId"
	extCompressed   = "compressed"
	extBodyCRC32    = "bodyCrc32"
	extMasterAddr   = "masterAddr"
	extChanged      = "changed"

	// ExtDelta ("true") marks a REGISTER_BROKER whose body is a delta.
	ExtDelta = "petrelDelta"
	// ExtBaseVersion is the data version (JSON) a delta applies to.
	ExtBaseVersion = "baseVersion"
	// ExtZlib ("true") marks a body compressed with zlib.
	ExtZlib = "petrelZlib"
	// ExtNeedFull ("true") in an answer refuses a delta: send a full
	// registration.
	ExtNeedFull = "petrelNeedFull"
	// ExtDataVersion in an answer is the data version (JSON) the name
	// server now holds for the broker.
	ExtDataVersion = "dataVersion"
)

// registerBody is Java's RegisterBrokerBody.
type registerBody struct {
	Wrapper struct {
		TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
		DataVersion      DataVersion            `json:"dataVersion"`
	} `json:"topicConfigSerializeWrapper"`
	FilterServerList []string `json:"filterServerList"`
}

// deltaBody is our incremental registration body.
type deltaBody struct {
	DataVersion      DataVersion            `json:"dataVersion"`
	TopicConfigTable map[string]TopicConfig `json:"topicConfigTable"`
	RemovedTopics    []string               `json:"removedTopics"`
}

// encodeRegisterBody writes a Java-compatible full registration body.
func encodeRegisterBody(topics map[string]TopicConfig, v DataVersion) []byte {
	var b registerBody
	b.Wrapper.TopicConfigTable = topics
	if topics == nil {
		b.Wrapper.TopicConfigTable = map[string]TopicConfig{}
	}
	b.Wrapper.DataVersion = v
	b.FilterServerList = []string{}
	out, err := json.Marshal(b)
	if err != nil {
		panic(fmt.Sprintf("namesrv: encode registration: %v", err)) // only plain types: cannot fail
	}
	return out
}

// decodeRegisterBody reads a Java full registration body.
func decodeRegisterBody(body []byte) (map[string]TopicConfig, DataVersion, error) {
	var b registerBody
	if err := json.Unmarshal(body, &b); err != nil {
		return nil, DataVersion{}, fmt.Errorf("%w: decode body: %v", ErrBadRegistration, err)
	}
	topics, err := checkTopics(b.Wrapper.TopicConfigTable)
	return topics, b.Wrapper.DataVersion, err
}

// encodeDeltaBody writes a delta registration body.
func encodeDeltaBody(v DataVersion, changed map[string]TopicConfig, removed []string) []byte {
	d := deltaBody{DataVersion: v, TopicConfigTable: changed, RemovedTopics: removed}
	if d.TopicConfigTable == nil {
		d.TopicConfigTable = map[string]TopicConfig{}
	}
	if d.RemovedTopics == nil {
		d.RemovedTopics = []string{}
	}
	out, err := json.Marshal(d)
	if err != nil {
		panic(fmt.Sprintf("namesrv: encode delta: %v", err))
	}
	return out
}

// decodeDeltaBody reads a delta registration body.
func decodeDeltaBody(body []byte) (DataVersion, map[string]TopicConfig, []string, error) {
	var d deltaBody
	if err := json.Unmarshal(body, &d); err != nil {
		return DataVersion{}, nil, nil, fmt.Errorf("%w: decode delta body: %v", ErrBadRegistration, err)
	}
	topics, err := checkTopics(d.TopicConfigTable)
	if err != nil {
		return DataVersion{}, nil, nil, err
	}
	for _, name := range d.RemovedTopics {
		if name == "" {
			return DataVersion{}, nil, nil, fmt.Errorf("%w: empty removed topic name", ErrBadRegistration)
		}
	}
	return d.DataVersion, topics, d.RemovedTopics, nil
}

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

// bodyCRC is Java's UtilAll.crc32: CRC-32 (IEEE) masked to 31 bits.
func bodyCRC(body []byte) int64 { return int64(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

// deflate compresses body with zlib.
func deflate(body []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write(body) // a bytes.Buffer does not fail
	_ = w.Close()
	return buf.Bytes()
}

// inflate undoes deflate, refusing output over MaxRegistrationBytes.
func inflate(body []byte) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: inflate body: %v", ErrBadRegistration, err)
	}
	out, err := io.ReadAll(io.LimitReader(r, MaxRegistrationBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: inflate body: %v", ErrBadRegistration, err)
	}
	if len(out) > MaxRegistrationBytes {
		return nil, fmt.Errorf("%w: inflated body over %d bytes", ErrBadRegistration, MaxRegistrationBytes)
	}
	return out, nil
}

// decodeRegistration turns the ext fields and body of a REGISTER_BROKER
// request into a Registration (Session left 0). It reads Java's
// uncompressed JSON body and our delta and zlib extensions.
func decodeRegistration(ext map[string]string, body []byte) (Registration, error) {
	var r Registration
	id, err := brokerIdentity(ext)
	if err != nil {
		return r, err
	}
	r.Broker, r.Addr = id, ext[extBrokerAddr]
	r.HAServerAddr = ext[extHAServerAddr]
	if ext[extCompressed] == "true" {
		return r, fmt.Errorf("%w: compressed=true (set the broker's compressedRegister=false)", ErrUnsupported)
	}
	if s := ext[extBodyCRC32]; s != "" && s != "0" {
		want, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return r, fmt.Errorf("%w: bodyCrc32 %q: %v", ErrBadRegistration, s, err)
		}
		if got := bodyCRC(body); got != want {
			return r, fmt.Errorf("%w: bodyCrc32 %d, body has %d", ErrBadRegistration, want, got)
		}
	}
	if ext[ExtZlib] == "true" {
		if body, err = inflate(body); err != nil {
			return r, err
		}
	}
	if ext[ExtDelta] == "true" {
		r.Delta = true
		if r.BaseVersion, err = parseVersion(ext[ExtBaseVersion]); err != nil {
			return r, err
		}
		r.Version, r.Topics, r.Removed, err = decodeDeltaBody(body)
		return r, err
	}
	if len(body) == 0 {
		// Java brokers always send a body; accept an empty one as "no topics".
		r.Topics = map[string]TopicConfig{}
		return r, nil
	}
	r.Topics, r.Version, err = decodeRegisterBody(body)
	return r, err
}

// brokerIdentity reads brokerName, clusterName, brokerId and brokerAddr.
func brokerIdentity(ext map[string]string) (BrokerID, error) {
	id := BrokerID{Cluster: ext[extClusterName], Name: ext[extBrokerName]}
	if id.Name == "" {
		return id, fmt.Errorf("%w: no brokerName", ErrBadRegistration)
	}
	if ext[extBrokerAddr] == "" {
		return id, fmt.Errorf("%w: no brokerAddr", ErrBadRegistration)
	}
	n, err := strconv.ParseInt(ext[extBrokerID], 10, 64)
	if err != nil || n < 0 {
		return id, fmt.Errorf("%w: brokerId %q", ErrBadRegistration, ext[extBrokerID])
	}
	id.ID = n
	return id, nil
}

func parseVersion(s string) (DataVersion, error) {
	var v DataVersion
	if err := json.Unmarshal([]byte(s), &v); err != nil {
		return v, fmt.Errorf("%w: data version %q: %v", ErrBadRegistration, s, err)
	}
	return v, nil
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
