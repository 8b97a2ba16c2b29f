package main

// The stores the rota binary opens by data source name (--store).
import (
	_ "github.com/rotajobs/rota/store/postgres"
	_ "github.com/rotajobs/rota/store/sqlite"
)
