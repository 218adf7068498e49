package rmq

// Broker registration with the name servers:
//
//	103 REGISTER_BROKER     ext brokerName, brokerAddr, clusterName, haServerAddr, brokerId,
//	                        compressed, bodyCrc32 (+ Petrel's petrelDelta, baseVersion, petrelZlib,
//	                        petrelMasterEpoch);
//	                        body RegisterBrokerBody JSON (Java's) or DeltaRegisterBody (Petrel's)
//	                        answer ext haServerAddr, masterAddr, dataVersion; body the
//	                        ORDER_TOPIC_CONFIG KVTable when set; a refused delta is
//	                        SYSTEM_ERROR with petrelNeedFull=true
//	104 UNREGISTER_BROKER   ext brokerName, brokerAddr, clusterName, brokerId
//	322 QUERY_DATA_VERSION  ext as 104; body DataVersion; answer ext changed, body DataVersion
//
// The petrel* fields and dataVersion are Petrel's extension: a Java broker
// never sends them and ignores them in answers.

import (
	"bytes"
	"compress/zlib"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/petrelmq/petrel/internal/remoting"
)

// Ext keys of Petrel's registration extension.
const (
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
	// ExtMasterEpoch is the master epoch (decimal, > 0) a broker in
	// controller mode registers with: the name server keeps the highest
	// epoch's claim to broker id 0 (issue 17).
	ExtMasterEpoch = "petrelMasterEpoch"
)

// MaxRegistrationBytes bounds the inflated size of a zlib-compressed
// registration body.
const MaxRegistrationBytes = 256 << 20

// BrokerIdentity names one broker process in 103, 104 and 322:
// brokerName, brokerAddr and brokerId (≥ 0) are required.
type BrokerIdentity struct {
	ClusterName string
	BrokerName  string
	BrokerAddr  string
	BrokerID    int64
}

func (f *fields) identity() BrokerIdentity {
	id := BrokerIdentity{
		ClusterName: f.str("clusterName"),
		BrokerName:  f.need("brokerName"),
		BrokerAddr:  f.need("brokerAddr"),
		BrokerID:    f.needI64("brokerId"),
	}
	if id.BrokerID < 0 {
		f.fail(&FieldError{Field: "brokerId", Value: f.str("brokerId"), Want: "a non-negative 64-bit integer"})
	}
	return id
}

func (id BrokerIdentity) ext(haServerAddr string) map[string]string {
	return map[string]string{
		"brokerName": id.BrokerName, "brokerAddr": id.BrokerAddr, "clusterName": id.ClusterName,
		"haServerAddr": haServerAddr, "brokerId": itoa(id.BrokerID),
	}
}

// RegisterBrokerRequest is the header of 103.
type RegisterBrokerRequest struct {
	BrokerIdentity
	HAServerAddr string
	// Compressed is Java's compressed=true body format, which Petrel does
	// not read.
	Compressed bool
	// BodyCRC32 is the body's BodyCRC; 0 means unchecked.
	BodyCRC32 int64
	// Delta marks Petrel's incremental registration on top of BaseVersion.
	Delta       bool
	BaseVersion DataVersion
	// Zlib marks a body compressed with zlib (Petrel's).
	Zlib bool
	// MasterEpoch is the master epoch the broker knows (ExtMasterEpoch);
	// 0: none sent (official brokers, and brokers without a controller).
	MasterEpoch uint32
}

// DecodeRegisterBroker reads the header of 103 (the body is read by
// DecodeRegisterBrokerBody or DecodeDeltaRegisterBody, after Inflate when
// Zlib).
func DecodeRegisterBroker(c *remoting.Command) (RegisterBrokerRequest, error) {
	f := fields{c: c}
	h := RegisterBrokerRequest{
		BrokerIdentity: f.identity(),
		HAServerAddr:   f.str("haServerAddr"),
		Compressed:     f.boolean("compressed"),
		BodyCRC32:      f.i64("bodyCrc32"),
		Delta:          f.boolean(ExtDelta),
		Zlib:           f.boolean(ExtZlib),
	}
	if e := f.i64(ExtMasterEpoch); e < 0 || e > 1<<32-1 {
		f.fail(&FieldError{Field: ExtMasterEpoch, Value: f.str(ExtMasterEpoch), Want: "a master epoch, 0..4294967295"})
	} else {
		h.MasterEpoch = uint32(e)
	}
	if h.Delta {
		h.BaseVersion = f.version(ExtBaseVersion)
	}
	return h, f.result()
}

// version reads a required data version field (JSON).
func (f *fields) version(name string) DataVersion {
	var v DataVersion
	s := f.need(name)
	if s != "" && json.Unmarshal([]byte(s), &v) != nil {
		f.fail(&FieldError{Field: name, Value: s, Want: `a data version {"timestamp":ms,"counter":n}`})
	}
	return v
}

// EncodeRegisterBroker is a 103 request with body (already deflated when
// h.Zlib). bodyCrc32 is computed from body; h.BodyCRC32 is not used.
func EncodeRegisterBroker(h RegisterBrokerRequest, body []byte) *remoting.Command {
	ext := h.ext(h.HAServerAddr)
	if h.Delta {
		ext[ExtDelta] = "true"
		ext[ExtBaseVersion] = h.BaseVersion.String()
	}
	if h.Zlib {
		ext[ExtZlib] = "true"
	}
	if h.MasterEpoch > 0 {
		ext[ExtMasterEpoch] = itoa(int64(h.MasterEpoch))
	}
	ext["compressed"] = btoa(h.Compressed)
	ext["bodyCrc32"] = itoa(BodyCRC(body))
	return remoting.NewRequest(CodeRegisterBroker, ext, body)
}

// RegisteredTopic is one topic as a broker registers it (Java's
// TopicConfig without RocketMQ 5's attributes, which name servers ignore:
// an incoming attributes field is dropped). It is comparable.
type RegisteredTopic struct {
	TopicName       string `json:"topicName"`
	ReadQueueNums   int32  `json:"readQueueNums"`
	WriteQueueNums  int32  `json:"writeQueueNums"`
	Perm            int32  `json:"perm"`
	TopicFilterType string `json:"topicFilterType"`
	TopicSysFlag    int32  `json:"topicSysFlag"`
	Order           bool   `json:"order"`
}

// RegisterBrokerBody is Java's RegisterBrokerBody, a full registration.
type RegisterBrokerBody struct {
	Wrapper struct {
		TopicConfigTable map[string]RegisteredTopic `json:"topicConfigTable"`
		DataVersion      DataVersion                `json:"dataVersion"`
	} `json:"topicConfigSerializeWrapper"`
	FilterServerList []string `json:"filterServerList"`
}

// EncodeRegisterBrokerBody writes a Java-compatible full registration
// body (nil table and list as {} and []).
func EncodeRegisterBrokerBody(topics map[string]RegisteredTopic, v DataVersion) []byte {
	var b RegisterBrokerBody
	b.Wrapper.TopicConfigTable = topics
	if topics == nil {
		b.Wrapper.TopicConfigTable = map[string]RegisteredTopic{}
	}
	b.Wrapper.DataVersion = v
	b.FilterServerList = []string{}
	return mustJSON(b)
}

// DecodeRegisterBrokerBody reads a full registration body.
func DecodeRegisterBrokerBody(body []byte) (RegisterBrokerBody, error) {
	var b RegisterBrokerBody
	err := decodeJSON(body, "RegisterBrokerBody", &b)
	return b, err
}

// DeltaRegisterBody is Petrel's incremental registration body: the
// topics added or changed since the base version, and those removed.
type DeltaRegisterBody struct {
	DataVersion      DataVersion                `json:"dataVersion"`
	TopicConfigTable map[string]RegisteredTopic `json:"topicConfigTable"`
	RemovedTopics    []string                   `json:"removedTopics"`
}

// EncodeDeltaRegisterBody writes a delta body (nil table and list as {}
// and []).
func EncodeDeltaRegisterBody(d DeltaRegisterBody) []byte {
	if d.TopicConfigTable == nil {
		d.TopicConfigTable = map[string]RegisteredTopic{}
	}
	if d.RemovedTopics == nil {
		d.RemovedTopics = []string{}
	}
	return mustJSON(d)
}

// DecodeDeltaRegisterBody reads a delta body.
func DecodeDeltaRegisterBody(body []byte) (DeltaRegisterBody, error) {
	var d DeltaRegisterBody
	err := decodeJSON(body, "delta registration", &d)
	return d, err
}

// BodyCRC is Java's UtilAll.crc32: CRC-32 (IEEE) masked to 31 bits.
func BodyCRC(body []byte) int64 { return int64(crc32.ChecksumIEEE(body) & 0x7FFFFFFF) }

// Deflate compresses a registration body with zlib.
func Deflate(body []byte) []byte {
	var buf bytes.Buffer
	w := zlib.NewWriter(&buf)
	_, _ = w.Write(body) // a bytes.Buffer does not fail
	_ = w.Close()
	return buf.Bytes()
}

// Inflate undoes Deflate, refusing output over limit bytes (a *BodyError).
func Inflate(body []byte, limit int) ([]byte, error) {
	r, err := zlib.NewReader(bytes.NewReader(body))
	if err != nil {
		return nil, &BodyError{Body: "registration", Problem: "the zlib body does not inflate"}
	}
	out, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, &BodyError{Body: "registration", Problem: "the zlib body does not inflate"}
	}
	if len(out) > limit {
		return nil, &BodyError{Body: "registration", Problem: fmt.Sprintf("the inflated body is over %d bytes", limit)}
	}
	return out, nil
}

// RegisterBrokerResponse is a successful answer of 103.
type RegisterBrokerResponse struct {
	// MasterAddr and MasterHAAddr name the master of a slave's broker name.
	MasterAddr   string
	MasterHAAddr string
	// DataVersion is what the name server now holds for the broker.
	DataVersion DataVersion
	// OrderTopicConf, when not nil, is sent as the KVTable body.
	OrderTopicConf map[string]string
}

// EncodeRegisterBrokerResponse answers a 103 with success.
func EncodeRegisterBrokerResponse(req *remoting.Command, r RegisterBrokerResponse) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.SetExt("haServerAddr", r.MasterHAAddr)
	resp.SetExt("masterAddr", r.MasterAddr)
	resp.SetExt(ExtDataVersion, r.DataVersion.String())
	if r.OrderTopicConf != nil {
		resp.Body = EncodeKVTableBody(KVTable{Table: r.OrderTopicConf})
	}
	return resp
}

// RegisterBrokerMaster reads the master of a slave's broker name from a
// successful 103 answer (ext masterAddr and haServerAddr, as RocketMQ's
// RegisterBrokerResult); both are empty for a master or when the name
// server knows no master of the group.
func RegisterBrokerMaster(resp *remoting.Command) (masterAddr, haServerAddr string) {
	return resp.Ext("masterAddr"), resp.Ext("haServerAddr")
}

// EncodeNeedFullRegistration refuses a delta 103: SYSTEM_ERROR with
// petrelNeedFull=true.
func EncodeNeedFullRegistration(req *remoting.Command, remark string) *remoting.Command {
	return remoting.NewResponse(req, RespSystemError, remark).SetExt(ExtNeedFull, "true")
}

// NeedFullRegistration reports whether a 103 answer refused a delta.
func NeedFullRegistration(resp *remoting.Command) bool { return parseBool(resp.Ext(ExtNeedFull)) }

// UnregisterBrokerRequest is the header of 104.
type UnregisterBrokerRequest struct {
	BrokerIdentity
	// HAServerAddr is sent by Petrel's registrar and ignored.
	HAServerAddr string
}

// DecodeUnregisterBroker reads the header of 104.
func DecodeUnregisterBroker(c *remoting.Command) (UnregisterBrokerRequest, error) {
	f := fields{c: c}
	h := UnregisterBrokerRequest{BrokerIdentity: f.identity(), HAServerAddr: f.str("haServerAddr")}
	return h, f.result()
}

// EncodeUnregisterBroker is a 104 request.
func EncodeUnregisterBroker(h UnregisterBrokerRequest) *remoting.Command {
	return remoting.NewRequest(CodeUnregisterBroker, h.ext(h.HAServerAddr), nil)
}

// QueryDataVersionRequest is 322: the identity header and the broker's
// data version as the body (required).
type QueryDataVersionRequest struct {
	BrokerIdentity
	DataVersion DataVersion
}

// DecodeQueryDataVersion reads 322, header and body.
func DecodeQueryDataVersion(c *remoting.Command) (QueryDataVersionRequest, error) {
	f := fields{c: c}
	h := QueryDataVersionRequest{BrokerIdentity: f.identity()}
	if err := f.result(); err != nil {
		return h, err
	}
	if err := decodeJSON(c.Body, "DataVersion", &h.DataVersion); err != nil {
		return h, err
	}
	return h, nil
}

// EncodeQueryDataVersion is a 322 request.
func EncodeQueryDataVersion(h QueryDataVersionRequest) *remoting.Command {
	ext := h.ext("")
	delete(ext, "haServerAddr")
	return remoting.NewRequest(CodeQueryDataVersion, ext, mustJSON(h.DataVersion))
}

// QueryDataVersionResponse is the answer of 322: whether the name server's
// version differs, and the version it holds (nil: it holds none).
type QueryDataVersionResponse struct {
	Changed bool
	Held    *DataVersion
}

// EncodeQueryDataVersionResponse answers a 322 with success.
func EncodeQueryDataVersionResponse(req *remoting.Command, r QueryDataVersionResponse) *remoting.Command {
	resp := remoting.NewResponse(req, RespSuccess, "")
	resp.SetExt("changed", btoa(r.Changed))
	if r.Held != nil {
		resp.Body = mustJSON(*r.Held)
	}
	return resp
}

// DecodeQueryDataVersionResponse reads the answer of 322.
func DecodeQueryDataVersionResponse(c *remoting.Command) (QueryDataVersionResponse, error) {
	r := QueryDataVersionResponse{Changed: parseBool(c.Ext("changed"))}
	if len(c.Body) > 0 {
		var v DataVersion
		if err := decodeJSON(c.Body, "DataVersion", &v); err != nil {
			return r, err
		}
		r.Held = &v
	}
	return r, nil
}
