// Package chat is the chat world of the examples: channels of messages.
package chat

import (
	"github.com/seahaven/seahaven/env"
)

// World is the chat world.
var World = env.NewWorld(env.WorldSpec{
	Name:        "chat",
	Version:     "1.0.0",
	Description: "Team chat: channels and messages.",
	Schema: `CREATE TABLE messages (
  id TEXT PRIMARY KEY DEFAULT (lower(hex(randomblob(8)))),
  channel TEXT NOT NULL,
  author TEXT NOT NULL,
  body TEXT NOT NULL,
  sent_at TEXT NOT NULL DEFAULT CURRENT_TIMESTAMP
) STRICT;
CREATE INDEX messages_by_channel ON messages (channel, sent_at);`,
})

// SendArgs are the arguments of send_message.
type SendArgs struct {
	Channel string `json:"channel" doc:"The channel, without #." maxlen:"64"`
	Text    string `json:"text" doc:"The message text." maxlen:"4000"`
	Author  string `json:"author,omitempty" default:"agent" doc:"Who sends it." maxlen:"200"`
}

// Message is one chat message.
type Message struct {
	ID      string `json:"id"`
	Channel string `json:"channel"`
	Author  string `json:"author"`
	Body    string `json:"body"`
	SentAt  string `json:"sent_at"`
}

// SendMessage posts a message.
var SendMessage = env.Tool(World, "send_message", "Post a message to a channel.",
	func(c *env.Ctx, in SendArgs) (Message, error) {
		row, err := c.DB.One("INSERT INTO messages (channel, author, body) VALUES (?, ?, ?) RETURNING id, channel, author, body, sent_at",
			in.Channel, in.Author, in.Text)
		if err != nil {
			return Message{}, err
		}
		return Message{ID: row["id"].(string), Channel: in.Channel, Author: in.Author, Body: in.Text, SentAt: row["sent_at"].(string)}, nil
	})

// ReadArgs are the arguments of read_channel.
type ReadArgs struct {
	Channel string `json:"channel" doc:"The channel, without #." maxlen:"64"`
}

// ReadChannel lists a channel's messages.
var ReadChannel = env.Tool(World, "read_channel", "List a channel's messages, oldest first.",
	func(c *env.Ctx, in ReadArgs) ([]env.Row, error) {
		return c.DB.Rows("SELECT id, author, body, sent_at FROM messages WHERE channel = ? ORDER BY sent_at, id", in.Channel)
	})
