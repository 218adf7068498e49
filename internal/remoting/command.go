package remoting

import (
	"errors"
	"strconv"
)

// Flag bits of Command.Flag.
const (
	// FlagResponse marks a response; it is matched to a request by Opaque.
	FlagResponse int32 = 1
	// FlagOneway marks a request whose sender does not wait for an answer;
	// a Conn never answers a request that carries it.
	FlagOneway int32 = 2
)

// Serialisation types of the header (the high byte of the header word).
const (
	SerializeJSON     byte = 0
	SerializeRocketMQ byte = 1
)

// DefaultVersion is the version our commands carry (Java 4.9.4 sends the
// same number; clients only compare a broker's version with 0).
const DefaultVersion int16 = 401

// LanguageGo is the language our commands carry.
const LanguageGo = "GO"

// Response codes the transport itself produces. Every other code belongs to
// the broker and name server.
const (
	CodeSuccess                 int16 = 0
	CodeSystemError             int16 = 1
	CodeSystemBusy              int16 = 2
	CodeRequestCodeNotSupported int16 = 3
)

// Sentinel errors. Errors returned by the codec and by connections wrap one
// of them; test with errors.Is.
var (
	// ErrShort is returned by DecodeFrame when the input holds less than one
	// whole frame; more bytes may complete it.
	ErrShort = errors.New("remoting: incomplete frame")
	// ErrMalformed classes a frame or header that can never decode: a
	// header length beyond the frame, an unknown serialisation type, bad
	// JSON, a field of the wrong type or out of range.
	ErrMalformed = errors.New("remoting: malformed frame")
	// ErrFrameTooLarge is returned when a length prefix exceeds the maximum
	// frame size.
	ErrFrameTooLarge = errors.New("remoting: frame too large")
	// ErrInvalidCommand is returned by EncodeFrame for a command that cannot
	// be put on the wire (header over 16 MiB, binary key over 32767 bytes,
	// unknown serialisation type, frame over 2 GiB).
	ErrInvalidCommand = errors.New("remoting: command cannot be encoded")
	// ErrConnClosed is returned by calls on a connection that is closed or
	// closes while they wait.
	ErrConnClosed = errors.New("remoting: connection closed")
	// ErrClosed is returned by a Server or Client after Close.
	ErrClosed = errors.New("remoting: closed")
)

// Command is one RocketMQ remoting command: a request or a response.
//
// A Command handed to EncodeFrame, Invoke or a handler's return is only read
// (Invoke and Respond set Opaque and Flag), and must not be changed until
// the call returns; Body and BodyParts are not copied by Conn writes until
// the frame is on the wire, see Release.
type Command struct {
	Code      int16
	Language  string // "GO" for ours; anything is accepted; empty encodes as "GO"
	Version   int16
	Opaque    int32
	Flag      int32 // FlagResponse | FlagOneway
	Remark    string
	ExtFields map[string]string // nil when the header had none; every value a string on the wire
	Body      []byte            // after a decode, aliases the frame buffer

	// SerializeType is the header serialisation: as received, and for
	// responses sent by a Conn always that of the request.
	SerializeType byte

	// BodyParts, when not empty, replaces Body: the body is their
	// concatenation, and a Conn writes them with writev, without copying
	// (the zero-copy pull path). The slices must stay unchanged until
	// Release runs.
	BodyParts [][]byte
	// Release, when set, is called exactly once after a Conn has written
	// the command or dropped it (connection closed, encode error), so
	// ref-counted buffers behind Body/BodyParts can be returned. EncodeFrame
	// does not call it.
	Release func()

	// bext is a ROCKETMQ binary ext block as received (its structure
	// checked by the decoder), kept by a lazy decode: Ext and EachExt read
	// it in place, so a send costs neither a map nor a list of its fields.
	// Its fields come after those of ExtFields and before those of ext.
	bext string
	// ext holds ext fields as a list, after those of ExtFields and bext:
	// set by AppendExt, and by the JSON decoder for requests given to a
	// BatchHandler (building a map costs more than the send it carries).
	// Ext reads all three.
	ext []extPair

	// wideCode is the code of a JSON header that does not fit Code (which
	// is then 0); 0 when it fits.
	wideCode int32
	// held is the read budget the request's frame holds until its handler
	// is done (server connections).
	held int
}

// FullCode is the code as the header carried it: Code, or a JSON header's
// code that does not fit int16 (RocketMQ 5 numbers some requests above
// 32767, e.g. 200050 POP_MESSAGE). A Server hands requests with such a
// code to the handler HandleWide registered for it, and answers the others
// REQUEST_CODE_NOT_SUPPORTED itself.
func (c *Command) FullCode() int32 {
	if c.wideCode != 0 {
		return c.wideCode
	}
	return int32(c.Code)
}

// extPair is one ext field of Command.ext; null marks a JSON null, which
// removes the key (as a later duplicate replaces it).
type extPair struct {
	key, value string
	null       bool
}

// IsResponse reports whether the response flag is set.
func (c *Command) IsResponse() bool { return c.Flag&FlagResponse != 0 }

// IsOneway reports whether the oneway flag is set.
func (c *Command) IsOneway() bool { return c.Flag&FlagOneway != 0 }

// NewRequest returns a request with language GO and DefaultVersion. The
// opaque is assigned when the request is sent.
func NewRequest(code int16, ext map[string]string, body []byte) *Command {
	return &Command{Code: code, Language: LanguageGo, Version: DefaultVersion, ExtFields: ext, Body: body}
}

// NewWideRequest is NewRequest for a code that may not fit int16
// (RocketMQ 5's pop requests, 200050 and up). Such a request goes out only
// with a JSON header (the binary header's code is 16 bits).
func NewWideRequest(code int32, ext map[string]string, body []byte) *Command {
	c := NewRequest(int16(code), ext, body)
	if code != int32(int16(code)) {
		c.Code, c.wideCode = 0, code
	}
	return c
}

// NewResponse returns a response to req: same opaque and serialisation
// type, response flag set, language GO and DefaultVersion.
func NewResponse(req *Command, code int16, remark string) *Command {
	return &Command{
		Code:          code,
		Language:      LanguageGo,
		Version:       DefaultVersion,
		Opaque:        req.Opaque,
		Flag:          FlagResponse,
		Remark:        remark,
		SerializeType: req.SerializeType,
	}
}

// SetExt sets an ext field, allocating the map on first use. It returns c.
func (c *Command) SetExt(key, value string) *Command {
	if c.ExtFields == nil {
		c.ExtFields = make(map[string]string, 8)
	}
	c.ExtFields[key] = value
	return c
}

// Ext returns the ext field key, or "" when it is absent. Handlers
// registered with HandleBatch must read ext fields with Ext (their
// requests' ExtFields is nil).
func (c *Command) Ext(key string) string {
	for i := len(c.ext) - 1; i >= 0; i-- {
		if p := &c.ext[i]; p.key == key {
			if p.null {
				return ""
			}
			return p.value
		}
	}
	if c.bext != "" {
		if v, ok := binaryExtLookup(c.bext, key); ok {
			return v
		}
	}
	return c.ExtFields[key]
}

// EachExt calls fn for every ext field, in the order a later one of the
// same key overrides an earlier one (ExtFields, then a binary block kept
// as received, then the listed fields); a key a JSON null removed is
// reported with an empty value.
func (c *Command) EachExt(fn func(key, value string)) {
	for k, v := range c.ExtFields {
		fn(k, v)
	}
	eachBinaryExt(c.bext, fn)
	for _, p := range c.ext {
		fn(p.key, p.value)
	}
}

// AppendExt adds an ext field without a map: cheaper than SetExt for
// responses built on the hot path. The key must not be set already. It
// returns c.
func (c *Command) AppendExt(key, value string) *Command {
	if c.ext == nil {
		c.ext = make([]extPair, 0, 8)
	}
	c.ext = append(c.ext, extPair{key: key, value: value})
	return c
}

// ResetExt removes the fields AppendExt added, keeping their memory, so a
// request can be reused for the next send. It returns c.
func (c *Command) ResetExt() *Command {
	c.bext = ""
	clear(c.ext)
	c.ext = c.ext[:0]
	return c
}

// materialize moves the binary block's and the listed ext fields into
// ExtFields.
func (c *Command) materialize() {
	if c.bext != "" {
		if c.ExtFields == nil {
			c.ExtFields = make(map[string]string, 8)
		}
		eachBinaryExt(c.bext, func(k, v string) { c.ExtFields[k] = v })
		c.bext = ""
	}
	if len(c.ext) == 0 {
		return
	}
	for _, p := range c.ext {
		switch {
		case p.null:
			delete(c.ExtFields, p.key)
		default:
			if c.ExtFields == nil {
				c.ExtFields = make(map[string]string, len(c.ext))
			}
			c.ExtFields[p.key] = p.value
		}
	}
	c.ext = nil
}

// BodyLen is the length of the body that will be written.
func (c *Command) BodyLen() int {
	if len(c.BodyParts) == 0 {
		return len(c.Body)
	}
	n := 0
	for _, p := range c.BodyParts {
		n += len(p)
	}
	return n
}

func (c *Command) release() {
	if r := c.Release; r != nil {
		c.Release = nil
		r()
	}
}

// languages are Java's LanguageCode ordinals, used by the ROCKETMQ binary
// header and by JSON headers that carry the language as a number.
var languages = [...]string{
	0: "JAVA", 1: "CPP", 2: "DOTNET", 3: "PYTHON", 4: "DELPHI", 5: "ERLANG",
	6: "RUBY", 7: "OTHER", 8: "HTTP", 9: "GO", 10: "PHP", 11: "OMS", 12: "RUST",
}

const languageOther = 7

// languageName maps a language code to its name; codes without a name
// become their decimal text so that they survive a round trip.
func languageName(code int64) string {
	if code >= 0 && code < int64(len(languages)) {
		return languages[code]
	}
	return strconv.FormatInt(code, 10)
}

// languageCode maps a name back to the binary header's byte; unknown names
// become OTHER.
func languageCode(name string) byte {
	if name == "" || name == LanguageGo {
		return 9
	}
	for i, n := range languages {
		if n == name {
			return byte(i)
		}
	}
	if v, err := strconv.ParseUint(name, 10, 8); err == nil && strconv.FormatUint(v, 10) == name {
		return byte(v)
	}
	return languageOther
}
