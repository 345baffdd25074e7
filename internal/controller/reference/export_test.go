package reference

// Waiting is the map func of WakeWaiting's watches.
var Waiting = waiting
