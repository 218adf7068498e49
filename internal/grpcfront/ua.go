package grpcfront

// What the broker's client table (and so GET_CONSUMER_CONNECTION_LIST,
// `petrel group describe`) shows of a 5.x client: the language and
// version of its Settings' user agent in RocketMQ's remoting terms, as
// RocketMQ's proxy registers its gRPC clients.

import (
	"strconv"
	"strings"

	v2 "github.com/apache/rocketmq-clients/golang/v5/protocol/v2"
)

// languageCode is RocketMQ's LanguageCode name for a client language
// (OTHER for those it has none for).
func languageCode(l v2.Language) string {
	switch l {
	case v2.Language_JAVA:
		return "JAVA"
	case v2.Language_CPP:
		return "CPP"
	case v2.Language_DOT_NET:
		return "DOTNET"
	case v2.Language_GOLANG:
		return "GO"
	case v2.Language_RUST:
		return "RUST"
	case v2.Language_PYTHON:
		return "PYTHON"
	case v2.Language_PHP:
		return "PHP"
	case v2.Language_NODE_JS:
		return "NODE_JS"
	case v2.Language_RUBY:
		return "RUBY"
	}
	return "OTHER"
}

// Ordinals of RocketMQ's MQVersion.Version: from V5_0_0 each release
// V5_a_b (a, b in 0..9) follows its _SNAPSHOT, so its ordinal is
// mqVersion500 + 2*(10a+b).
const mqVersion500 = 413

// clientVersion is the MQVersion ordinal of a 5.x client version
// ("5.1.2", suffixes such as "-rc1" ignored), which mqadmin shows as
// V5_1_2; V5_0_0 when it is not a 5.a.b release with a, b ≤ 9 (RocketMQ's
// proxy registers Telemetry clients as V5_0_0).
func clientVersion(v string) int32 {
	if i := strings.IndexAny(v, "-+ "); i >= 0 {
		v = v[:i]
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 || parts[0] != "5" {
		return mqVersion500
	}
	a, err1 := strconv.Atoi(parts[1])
	b, err2 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || a < 0 || a > 9 || b < 0 || b > 9 {
		return mqVersion500
	}
	return mqVersion500 + int32(2*(10*a+b))
}
