package openenv

// DuplicateKey exposes duplicateKey to the external tests, which check it
// against a reference built on encoding/json.
var DuplicateKey = duplicateKey
