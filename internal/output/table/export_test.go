package table

// Summarizer is summarizer, for the tests of the package from outside.
var Summarizer = summarizer
