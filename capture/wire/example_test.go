package wire

import "fmt"

// Decoding an SSE body that arrives in two reads: each event knows the body offset of its last
// byte, which is how capture finds the socket read (and its kernel time) that delivered it.
func Example_decoder() {
	var d decoder
	var ev event
	var p payload
	for _, read := range []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\n\nda",
		"ta: {\"choices\":[{\"delta\":{\"content\":\"lo\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n",
	} {
		d.Feed([]byte(read))
		for d.Next(&ev) {
			if string(ev.Data) == "[DONE]" {
				fmt.Printf("bytes %d-%d: [DONE]\n", ev.Start, ev.End)
				continue
			}
			if err := parsePayload(ev.Data, &p, true); err != nil {
				fmt.Println(err)
				continue
			}
			fmt.Printf("bytes %d-%d: %d content bytes, finish %q\n", ev.Start, ev.End, p.Content, p.FinishReason)
		}
	}
	d.Finish()
	fmt.Printf("text %q, body %d bytes\n", p.Text, d.Offset())
	// Output:
	// bytes 0-49: 3 content bytes, finish ""
	// bytes 49-120: 2 content bytes, finish "stop"
	// bytes 120-134: [DONE]
	// text "Hello", body 134 bytes
}
