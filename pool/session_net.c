/* A session's network per stage: e.g. allowlist while a setup step installs packages from a
 * mirror, none while the agent's steps run. The switch is a step of the trajectory (what was
 * granted is part of what the episode was). */
#define _GNU_SOURCE
#include "session_internal.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

json_t *pd_session_set_network(pd_session *s, const char *mode, json_t *egress, const char *rid, pd_err *e)
{
	int net = pd_net_parse(mode);
	if (net < 0)
		return pd_fail_as(e, EINVAL, "network: '%s' is not none, loopback or allowlist", mode ? mode : ""), NULL;
	if (net == PD_NET_HOST)
		return pd_fail_as(e, EPERM, "network: the host's network is a template's, not a session stage's"), NULL;
	if (net != PD_NET_ALLOWLIST && egress && !json_is_null(egress))
		return pd_fail_as(e, EINVAL, "egress: only with network allowlist"), NULL;
	pd_egress_opts eo = {0};
	char **list = NULL;
	if (net == PD_NET_ALLOWLIST && pd_egress_narrow(&s->pl->t, egress, "egress", &eo, &list, e) < 0)
		return NULL;
	if (session_enter(s, e) < 0) {
		pd_egress_list_free(list);
		return NULL;
	}
	uint64_t t0 = pd_wall_us();
	int rc = pd_sandbox_set_network(s->sb, (pd_net)net, net == PD_NET_ALLOWLIST ? &eo : NULL, e);
	json_t *allow = json_array();
	for (size_t i = 0; list && list[i]; i++)
		json_array_append_new(allow, json_string(list[i]));
	pd_egress_list_free(list);
	json_t *action = json_pack("{s:s}", "network", pd_net_name((pd_net)net));
	if (net == PD_NET_ALLOWLIST)
		json_object_set_new(action, "egress", json_pack("{s:O}", "allow", allow));
	json_t *obs = json_pack("{s:b,s:s}", "ok", rc == 0, "network", pd_net_name(pd_sandbox_network(s->sb)));
	if (rc < 0)
		json_object_set_new(obs, "error", pd_json_text(e->msg));
	pd_err te = {0};
	session_traj_step(s, "network", rid, t0, action, json_incref(obs), NULL, false, &te);
	session_leave(s);
	if (rc < 0) {
		json_decref(obs);
		json_decref(allow);
		return NULL;
	}
	json_object_del(obs, "ok");
	if (net == PD_NET_ALLOWLIST)
		json_object_set_new(obs, "egress", json_pack("{s:O}", "allow", allow));
	json_decref(allow);
	return obs;
}
