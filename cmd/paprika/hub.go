package main

// runHub is `paprika hub`; written by the hub owner.
func runHub(args []string) int { return 2 }
