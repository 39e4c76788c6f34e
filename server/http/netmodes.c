/* /run_code's network per request. SandboxFusion's sandboxes reach the network; paddock's
 * templates do not unless they say so, and a trainer may want either per request. The operator
 * names the modes a request may ask for (--run-code-networks none,loopback,allowlist,host); for each, every
 * template whose own mode differs gets a twin, "<name>.net-<mode>", with that network and no warm
 * sandboxes (pool.min 0: built on demand, so an allowed mode nobody asks for costs nothing); an
 * allowlist twin only for a template with an "egress" allowlist, which it reaches. A
 * request's "network" then picks the twin; the record names the template it ran in. The twins are
 * parsed again from the same source rather than copied: a template owns its strings and image
 * lease, and a parsed one is a complete, independent object. */
#define _GNU_SOURCE
#include "http.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int mode_of(const char *name, size_t len)
{
	for (int m = 0; m < PD_NET_N; m++)
		if (strlen(pd_net_name((pd_net)m)) == len && !strncmp(pd_net_name((pd_net)m), name, len))
			return m;
	return -1;
}

int netmodes_add(pd_server *s, pd_err *e)
{
	const char *list = s->o.run_code_networks;
	if (!list || !*list)
		return 0;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		int m = mode_of(p, len);
		if (m < 0)
			return pd_fail_as(e, EINVAL, "--run-code-networks: '%.*s' is not loopback, none, allowlist or host",
					  (int)len, p);
		s->run_code_nets |= 1u << m;
		p += len + (p[len] == ',');
	}
	for (int m = 0; m < PD_NET_N; m++) {
		if (!(s->run_code_nets & (1u << m)))
			continue;
		pd_template *t2 = NULL;
		size_t n2 = 0;
		int rc = s->o.templates_file ? pd_templates_load(s->o.templates_file, &t2, &n2, e)
					     : pd_templates_default(&t2, &n2, e);
		if (rc < 0)
			return -1;
		pd_template *all = realloc(s->tpl, (s->ntpl + n2) * sizeof *all);
		if (!all) {
			pd_templates_free(t2, n2);
			return pd_fail(e, ENOMEM, "run_code_networks");
		}
		s->tpl = all;
		size_t kept = 0;
		for (size_t i = 0; i < n2; i++) {
			pd_template *t = &t2[i];
			char name[sizeof t->name + 16];
			snprintf(name, sizeof name, "%s.net-%s", t->name, pd_net_name((pd_net)m));
			if ((int)t->net == m || strlen(name) >= sizeof t->name || (m == PD_NET_ALLOWLIST && !t->egress_allow)) {
				/* the template has the mode already, no room for the twin's name, or no
				 * allowlist to reach (the template's "egress" grants it): freed below */
				continue;
			}
			snprintf(t->name, sizeof t->name, "%s", name);
			t->net = (pd_net)m;
			t->pool_min = 0;
			s->tpl[s->ntpl + kept++] = *t;
			memset(t, 0, sizeof *t); /* moved */
		}
		s->ntpl += kept;
		pd_templates_free(t2, n2); /* the moved ones are empty now; the rest are freed */
	}
	return 0;
}

int netmodes_pick(pd_server *s, pd_job *j, char *why, size_t len)
{
	if (!j->network[0])
		return 0;
	int m = mode_of(j->network, strlen(j->network));
	if (m < 0 || !(s->run_code_nets & (1u << m))) {
		snprintf(why, len, "network: '%s' is not one this daemon allows (--run-code-networks: %s)", j->network,
			 s->o.run_code_networks && *s->o.run_code_networks ? s->o.run_code_networks : "none allowed");
		return -1;
	}
	const pd_template *t = pd_pools_template(s->pools, j->template_name);
	if (!t || (int)t->net == m)
		return 0;
	char name[sizeof j->template_name + 16];
	snprintf(name, sizeof name, "%s.net-%s", j->template_name, pd_net_name((pd_net)m));
	if (!pd_pools_template(s->pools, name)) {
		snprintf(why, len, "network: no '%s' twin of template '%s' (%s)", j->network, j->template_name,
			 m == PD_NET_ALLOWLIST && !t->egress_allow ? "it has no egress allowlist" : "its name is too long");
		return -1;
	}
	snprintf(j->template_name, sizeof j->template_name, "%s", name);
	return 0;
}
