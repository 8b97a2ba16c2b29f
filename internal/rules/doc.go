// Package rules is the layer of rota's pure rules, one package each:
// lifecycle (every state transition, as a plan), fair (which group and
// job go next), schedule (repeats and cron), check (the validation of
// every request, and its errors), glob (type and group patterns) and names
// (the rule for names). Given rows, a request and the time, they decide;
// they read no clock, touch no file, database or network, and import no
// store package but the job types (store), so that both stores, the
// engine and the protocols share one decision. TestRulesDoNoIO holds them
// to it.
package rules
