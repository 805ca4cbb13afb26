// Package schemas embeds the JSON Schemas (draft 2020-12) of Seahaven's wire
// messages and of the seahaven.state/1 state document.
//
// The files are:
//
//	action.json           the data of a step message: list_tools or call_tool
//	observation.json      the observation object of a reset or step reply
//	step_response.json    {"observation","reward","done"}: observation frames, POST /reset and /step
//	reset_data.json       the data of a reset message and the body of POST /reset
//	inspect_request.json  the data of an inspect message and the body of POST /inspect
//	inspect_result.json   the rows of an inspect reply
//	state.json            the seahaven.state/1 document
//	error_frame.json      a WebSocket error frame
//	client_message.json   any frame a client sends on /ws
//	server_message.json   any frame the server sends on /ws
//
// action.json, observation.json and state.json are self-contained: the
// OpenEnv /schema route serves them as they are. The others refer to their
// siblings by file name. Every file has an $id under
// https://github.com/seahaven/seahaven/schemas/, so relative references also
// resolve when the files are bundled into one document, as the OpenAPI
// description does.
//
// Everything in this package is safe for concurrent use.
package schemas

import (
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"strings"
)

// FS holds the schema files, one per name, at the root (action.json, ...).
//
//go:embed *.json
var FS embed.FS

// ErrUnknown is returned (wrapped) by Get, and by schematest.Validate, for a
// name that has no schema file.
var ErrUnknown = errors.New("schemas: unknown schema")

// Names returns the schema names, without the .json suffix, sorted (as
// fs.ReadDir returns them).
func Names() []string {
	entries, err := fs.ReadDir(FS, ".")
	if err != nil {
		// The embedded root always exists; reaching this is a build defect.
		panic(fmt.Sprintf("schemas: reading embedded files: %v", err))
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".json"); ok {
			names = append(names, n)
		}
	}
	return names
}

// Get returns the schema called name ("action" or "action.json") as JSON.
// The returned bytes are a fresh copy the caller may keep or change. An
// unknown name gives an error wrapping ErrUnknown.
func Get(name string) (json.RawMessage, error) {
	b, err := FS.ReadFile(fileName(name))
	if err != nil {
		return nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	return json.RawMessage(b), nil
}

// fileName maps a schema name to its file, or "" (which FS has no file of)
// if it cannot name one.
func fileName(name string) string {
	name = strings.TrimSuffix(name, ".json")
	if name == "" || strings.ContainsAny(name, `/\.`) {
		return ""
	}
	return name + ".json"
}
