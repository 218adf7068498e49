package namesrv

import (
	"github.com/petrelmq/petrel/internal/remoting"
	"github.com/petrelmq/petrel/internal/remoting/rmq"
)

// Shorthands of the rmq codec for the tests.

func bodyCRC(body []byte) int64 { return rmq.BodyCRC(body) }

func deflate(body []byte) []byte { return rmq.Deflate(body) }

func encodeRegisterBody(topics map[string]TopicConfig, v DataVersion) []byte {
	return rmq.EncodeRegisterBrokerBody(topics, v)
}

func encodeDeltaBody(v DataVersion, changed map[string]TopicConfig, removed []string) []byte {
	return rmq.EncodeDeltaRegisterBody(rmq.DeltaRegisterBody{DataVersion: v, TopicConfigTable: changed, RemovedTopics: removed})
}

// decodeReg decodes a REGISTER_BROKER of these ext fields and body.
func decodeReg(ext map[string]string, body []byte) (Registration, error) {
	return decodeRegistration(remoting.NewRequest(rmq.CodeRegisterBroker, ext, body))
}
