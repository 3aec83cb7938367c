import type { OpenApiRegistry } from '../src/http/openapi.js';
import { listSchema } from '../src/pagination.js';
import * as auth from '../src/services/identity/auth.js';
import * as roles from '../src/services/identity/roles.js';
import * as userView from '../src/services/identity/user-view.js';
import * as users from '../src/services/identity/users.js';
import * as invitations from '../src/services/identity/invitations.js';
import { call, pathId, RestRouter } from './router.js';

/** Users of the organizations and partners the caller reaches, invitations, and the caller's own profile. */
export function usersRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Users');
  const user = { id: pathId('User') };
  const invitation = { id: pathId('Invitation') };

  r.post('/auth/accept-invite', { summary: "Accept an invitation link (a new account's new password, or an existing account's own); answers a session", body: invitations.AcceptInviteSchema, public: true, response: auth.AuthSessionSchema }, call(invitations.acceptInvite));

  r.get('/users/me', { summary: 'The caller: profile, effective permissions and memberships', hot: true, response: users.MeViewSchema }, call(users.getMe));
  r.patch('/users/me', { summary: "Update the caller's own profile", body: users.UpdateMeSchema, response: userView.UserViewSchema }, call(users.updateMe));
  r.get('/users/me/invitations', { summary: 'Memberships other organizations or partners offered the caller, not accepted yet', response: invitations.InvitationListSchema }, call(invitations.listMyInvitations));
  r.post('/users/me/invitations/:id/accept', { summary: 'Accept a pending invitation (an SSO session also gives currentPassword)', params: invitation, body: invitations.AcceptMyInvitationSchema, response: users.MembershipViewSchema }, call(invitations.acceptMyInvitation));
  r.post('/users/me/invitations/:id/decline', { summary: 'Decline a pending invitation', params: invitation, status: 204 }, call(invitations.declineMyInvitation));
  r.get('/users/roles', { summary: 'Roles the caller may assign', query: roles.AssignableRolesQuery, response: listSchema(roles.RoleViewSchema, 'RoleList') }, async (ctx, { query }) => ({ data: await roles.assignableRoles(ctx, query) }));

  r.get('/users', { summary: 'List users the caller reaches', query: users.UserListQuery, response: userView.UserPageSchema }, call(users.listUsers));
  r.post('/users/invite', { summary: 'Invite someone by email: answers the user and a one-time invite link', body: invitations.InviteUserSchema, status: 201, response: invitations.InviteResultSchema }, call(invitations.inviteUser));
  r.post('/users/resend-invite', { summary: 'A new invite link for a user who has not accepted (the old one stops working)', body: invitations.ResendInviteSchema, response: invitations.InviteResultSchema }, call(invitations.resendInvite));
  r.get('/users/:id', { summary: 'Get a user', params: user, response: userView.UserViewSchema }, call(users.getUser));
  r.patch('/users/:id', { summary: "Update a user's name, status or reach", params: user, body: users.UpdateUserSchema, response: userView.UserViewSchema }, call(users.updateUser));
  r.delete('/users/:id', { summary: 'Remove the memberships the caller manages (and the account with its last one)', params: user, status: 204 }, call(users.deleteUser));
  r.post('/users/:id/role', { summary: "Change a user's role (needs an MFA session)", params: user, body: users.SetUserRoleSchema, response: userView.UserViewSchema }, call(users.setUserRole));
  return r;
}
