// Package backend holds what every store package shares beyond the rules:
// the registry behind Store.Watch (Watchers), lease tokens and Bedrock ids,
// the metadata column's encoding, the retention condition both stores'
// sweeps write in SQL, and the paging of a listing in a caller's reach. It
// is for the stores (store/sqlite, store/postgres) and the engine, not for
// users: the public store package holds only the job types and the
// contract.
package backend
