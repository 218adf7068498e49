package rmq

// Name server KV configuration:
//
//	100 PUT_KV_CONFIG            ext namespace, key, value
//	101 GET_KV_CONFIG            ext namespace, key -> ext value; QUERY_NOT_FOUND (22) when unset
//	102 DELETE_KV_CONFIG         ext namespace, key
//	219 GET_KVLIST_BY_NAMESPACE  ext namespace -> KVTable; QUERY_NOT_FOUND when empty

import "github.com/petrelmq/petrel/internal/remoting"

// KVConfigRequest is the header of 100, 101 and 102: namespace and key are
// required; value is read for 100 only (an empty value is allowed).
type KVConfigRequest struct {
	Namespace string
	Key       string
	Value     string
}

// DecodeKVConfig reads the header of 100, 101 or 102 (Value only for 100).
func DecodeKVConfig(c *remoting.Command) (KVConfigRequest, error) {
	f := fields{c: c}
	h := KVConfigRequest{Namespace: f.need("namespace"), Key: f.need("key")}
	if c.Code == CodePutKVConfig {
		h.Value = f.str("value")
	}
	return h, f.result()
}

// EncodePutKVConfig is a 100 request.
func EncodePutKVConfig(h KVConfigRequest) *remoting.Command {
	return remoting.NewRequest(CodePutKVConfig, map[string]string{"namespace": h.Namespace, "key": h.Key, "value": h.Value}, nil)
}

// EncodeGetKVConfig is a 101 request.
func EncodeGetKVConfig(h KVConfigRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetKVConfig, map[string]string{"namespace": h.Namespace, "key": h.Key}, nil)
}

// EncodeDeleteKVConfig is a 102 request.
func EncodeDeleteKVConfig(h KVConfigRequest) *remoting.Command {
	return remoting.NewRequest(CodeDeleteKVConfig, map[string]string{"namespace": h.Namespace, "key": h.Key}, nil)
}

// EncodeGetKVConfigResponse answers a 101 with the value.
func EncodeGetKVConfigResponse(req *remoting.Command, value string) *remoting.Command {
	return remoting.NewResponse(req, RespSuccess, "").SetExt("value", value)
}

// KVListRequest is the header of 219; namespace is required.
type KVListRequest struct {
	Namespace string
}

// DecodeKVList reads the header of 219.
func DecodeKVList(c *remoting.Command) (KVListRequest, error) {
	f := fields{c: c}
	h := KVListRequest{Namespace: f.need("namespace")}
	return h, f.result()
}

// EncodeKVList is a 219 request.
func EncodeKVList(h KVListRequest) *remoting.Command {
	return remoting.NewRequest(CodeGetKVListByNamespace, map[string]string{"namespace": h.Namespace}, nil)
}

// KVTable is Java's KVTable, {"table":{"k":"v",...}}: the answer of 219
// and 28, and the body of a 103 answer.
type KVTable struct {
	Table map[string]string `json:"table"`
}

// EncodeKVTableBody writes a KVTable (keys sorted; a nil table as null,
// as Java's fastjson writes it).
func EncodeKVTableBody(t KVTable) []byte { return mustJSON(t) }

// DecodeKVTableBody reads a KVTable.
func DecodeKVTableBody(body []byte) (KVTable, error) {
	var t KVTable
	err := decodeJSON(body, "KVTable", &t)
	return t, err
}
