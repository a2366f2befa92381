package main

// runWorker is `paprika worker`; written by the hub owner.
func runWorker(args []string) int { return 2 }
