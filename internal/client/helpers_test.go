package client

// sseEvent is a chat chunk event carrying word.
const chunkPrefix = `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[`

func sseEvent(word string) string {
	return chunkPrefix + `{"index":0,"delta":{"content":"` + word + `"},"finish_reason":null}]}` + "\n\n"
}
