package message

import "time"

// Properties are a sent message's properties as a front hands them to the
// broker, in whichever form its protocol has them: the wire encoding of a
// 4.x send header (kept as it arrived, no copy; lookups scan it) or a map
// (gRPC). The broker decides what it stores from them. The zero value has
// no properties.
type Properties struct {
	enc string
	m   map[string]string
}

// EncodedProperties wraps properties encoded as "key 0x01 value 0x02 ..."
// (the 4.x wire and stored form). It does not copy or parse enc.
func EncodedProperties(enc string) Properties { return Properties{enc: enc} }

// MapProperties wraps a map; the broker may add its own keys to m. Keys
// and values must pass ValidProperty.
func MapProperties(m map[string]string) Properties { return Properties{m: m} }

// IsMap reports whether p holds a map (else an encoded string, maybe
// empty).
func (p Properties) IsMap() bool { return p.m != nil }

// Map returns the map of MapProperties, or nil for encoded properties.
func (p Properties) Map() map[string]string { return p.m }

// Get returns the value of key, as PropertyOf for encoded properties.
func (p Properties) Get(key string) (string, bool) {
	if p.m != nil {
		v, ok := p.m[key]
		return v, ok
	}
	return PropertyOf(p.enc, key)
}

// Encoded returns the encoded form: the string as given, or the map
// encoded with keys in sorted order (EncodeProperties; this allocates).
func (p Properties) Encoded() string {
	if p.m != nil {
		return EncodeProperties(p.m)
	}
	return p.enc
}

// Delay asks for a message to be delivered later than it is stored. At
// most one of its fields is set (a 4.x front picks by RocketMQ's order:
// delivery time, then relative delay, then level); the zero value is "at
// once". The broker applies its limits (MaxTimerDelay, the last level).
type Delay struct {
	// Level > 0 is a 4.x delay level (1 is the broker's first delay).
	Level int32
	// AtMS ≠ 0 is the delivery time in unix milliseconds; one not in the
	// future means at once.
	AtMS int64
	// After > 0 delivers that long after the broker stores the message.
	After time.Duration
}

// IsZero reports whether d asks for no delay.
func (d Delay) IsZero() bool { return d == Delay{} }
