// Package scenarios is the real-catalogs suite (realcatalogs/run): reactor
// against the catalog servers its users run, each its own process on
// loopback — Hive Metastore 3.1.3, Iceberg's JDBC catalog on PostgreSQL
// and on MariaDB, the Hadoop catalog on local disk, and moto's Glue (a
// stand-in) — with Spark 4.1 and Iceberg 1.12 writing beside `reactor run`
// (realcatalogs/spark/server.py). Everything is in its _test.go files; the
// tests skip unless realcatalogs/run set the REALCATALOGS_* variables.
//
// It owns starting and stopping those servers and the checks of the
// scenarios; it must not change reactor's behaviour: reactor runs as the
// binary built from this tree, configured through its flags.
package scenarios
