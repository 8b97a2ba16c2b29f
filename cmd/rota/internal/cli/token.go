package cli

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/rotajobs/rota/httpapi/wire"
	"github.com/rotajobs/rota/internal/rules/check"
	"github.com/rotajobs/rota/remote"
	"github.com/rotajobs/rota/store"
)

// tokenCommand is rota token: named tokens, managed with the admin token.
func tokenCommand(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create, list and revoke named tokens (admin token)",
		Long: `token manages the server's named tokens. A named token reaches only the
jobs of the groups and types it is given (GLOB patterns; none means all),
and changes nothing when read-only; the server's --auth-token is the admin
token, which reaches everything and alone may manage tokens. The server
keeps only a hash of each secret: "create" shows it once.`,
		Args: noArgs,
	}
	cmd.AddCommand(tokenCreateCommand(g), tokenListCommand(g), tokenRevokeCommand(g))
	return cmd
}

func tokenStore(g *globals) (*remote.Store, error) {
	cfg, err := g.remoteConfig()
	if err != nil {
		return nil, err
	}
	rs, err := remote.New(g.server, cfg)
	if err != nil {
		return nil, usageError{err}
	}
	return rs, nil
}

func tokenCreateCommand(g *globals) *cobra.Command {
	var groups, types []string
	var readOnly bool
	cmd := &cobra.Command{
		Use:   "create NAME [--groups PATTERNS] [--types PATTERNS] [--read-only]",
		Short: "Create a named token and print its secret",
		Example: `  rota token create acme-workers --groups 'acme-*'
  rota token create mail-dashboard --types 'mail.*' --read-only`,
		Args: exactArgs(1, "the token's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			req := wire.CreateTokenRequest{Name: args[0], Groups: groups, Types: types, ReadOnly: readOnly}
			if err := check.Token(store.Token{Name: req.Name, Groups: groups, Types: types}); err != nil {
				return usageError{err}
			}
			rs, err := tokenStore(g)
			if err != nil {
				return err
			}
			defer rs.Close()
			res, err := rs.CreateToken(cmd.Context(), req)
			if err != nil {
				return g.explain(err)
			}
			if g.json {
				return printJSON(cmd.OutOrStdout(), res)
			}
			fmt.Fprintln(cmd.OutOrStdout(), res.Secret)
			fmt.Fprintf(cmd.ErrOrStderr(), "token %q created (%s); its secret is above, shown this once\n", res.Token.Name, reach(res.Token))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&groups, "groups", nil, "GLOB patterns of the groups it reaches, comma-separated (default: every group)")
	f.StringSliceVar(&types, "types", nil, "GLOB patterns of the types it reaches, comma-separated (default: every type)")
	f.BoolVar(&readOnly, "read-only", false, "it reads, and changes nothing")
	return cmd
}

// reach says what a token reaches, for people.
func reach(t store.Token) string {
	groups, types := "every group", "every type"
	if t.Groups != nil {
		groups = "groups " + strings.Join(t.Groups, ", ")
	}
	if t.Types != nil {
		types = "types " + strings.Join(t.Types, ", ")
	}
	s := groups + "; " + types
	if t.ReadOnly {
		s += "; read-only"
	}
	return s
}

func tokenListCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "ls",
		Short:   "List the named tokens (never their secrets)",
		Example: "  rota token ls",
		Args:    noArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			rs, err := tokenStore(g)
			if err != nil {
				return err
			}
			defer rs.Close()
			ts, err := rs.Tokens(cmd.Context())
			if err != nil {
				return g.explain(err)
			}
			if g.json {
				if ts == nil {
					ts = []store.Token{}
				}
				return printJSON(cmd.OutOrStdout(), wire.TokensResponse{Tokens: ts})
			}
			if len(ts) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "no named tokens (rota token create NAME makes one)")
				return nil
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "NAME\tGROUPS\tTYPES\tACCESS\tCREATED")
			for _, t := range ts {
				groups, types, access := "*", "*", "read-write"
				if t.Groups != nil {
					groups = strings.Join(t.Groups, ",")
				}
				if t.Types != nil {
					types = strings.Join(t.Types, ",")
				}
				if t.ReadOnly {
					access = "read-only"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", t.Name, groups, types, access, t.CreatedAt.Local().Format("2006-01-02 15:04"))
			}
			return tw.Flush()
		},
	}
}

func tokenRevokeCommand(g *globals) *cobra.Command {
	return &cobra.Command{
		Use:     "revoke NAME",
		Short:   "Revoke a named token",
		Example: "  rota token revoke acme-workers",
		Args:    exactArgs(1, "the token's name"),
		RunE: func(cmd *cobra.Command, args []string) error {
			rs, err := tokenStore(g)
			if err != nil {
				return err
			}
			defer rs.Close()
			if err := rs.RevokeToken(cmd.Context(), args[0]); err != nil {
				return g.explain(err)
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "token %q revoked\n", args[0])
			return nil
		},
	}
}
