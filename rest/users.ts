import type { OpenApiRegistry } from '../src/http/openapi.js';
import { listSchema } from '../src/pagination.js';
import { AuthSessionSchema } from '../src/services/identity/auth.js';
import { AssignableRolesQuery, RoleViewSchema, assignableRoles } from '../src/services/identity/roles.js';
import { UserPageSchema, UserViewSchema } from '../src/services/identity/user-view.js';
import {
  MeViewSchema,
  MembershipViewSchema,
  SetUserRoleSchema,
  UpdateMeSchema,
  UpdateUserSchema,
  UserListQuery,
  deleteUser,
  getMe,
  getUser,
  listUsers,
  setUserRole,
  updateMe,
  updateUser,
} from '../src/services/identity/users.js';
import {
  AcceptInviteSchema,
  AcceptMyInvitationSchema,
  InvitationListSchema,
  InviteResultSchema,
  InviteUserSchema,
  ResendInviteSchema,
  acceptInvite,
  acceptMyInvitation,
  declineMyInvitation,
  inviteUser,
  listMyInvitations,
  resendInvite,
} from '../src/services/identity/invitations.js';
import { RestRouter, pathId } from './router.js';

/** Users of the organizations and partners the caller reaches, invitations, and the caller's own profile. */
export function usersRouter(openapi: OpenApiRegistry): RestRouter {
  const r = new RestRouter(openapi, 'Users');
  const user = { id: pathId('User') };
  const invitation = { id: pathId('Invitation') };

  r.post('/auth/accept-invite', { summary: "Accept an invitation link (a new account's new password, or an existing account's own); answers a session", body: AcceptInviteSchema, public: true, response: AuthSessionSchema }, (ctx, { body }) =>
    acceptInvite(ctx, body),
  );

  r.get('/users/me', { summary: 'The caller: profile, effective permissions and memberships', hot: true, response: MeViewSchema }, (ctx) => getMe(ctx));
  r.patch('/users/me', { summary: "Update the caller's own profile", body: UpdateMeSchema, response: UserViewSchema }, (ctx, { body }) => updateMe(ctx, body));
  r.get('/users/me/invitations', { summary: 'Memberships other organizations or partners offered the caller, not accepted yet', response: InvitationListSchema }, (ctx) => listMyInvitations(ctx));
  r.post('/users/me/invitations/:id/accept', { summary: 'Accept a pending invitation (an SSO session also gives currentPassword)', params: invitation, body: AcceptMyInvitationSchema, response: MembershipViewSchema }, (ctx, { params, body }) =>
    acceptMyInvitation(ctx, params.id, body),
  );
  r.post('/users/me/invitations/:id/decline', { summary: 'Decline a pending invitation', params: invitation, status: 204 }, (ctx, { params }) => declineMyInvitation(ctx, params.id));
  r.get('/users/roles', { summary: 'Roles the caller may assign', query: AssignableRolesQuery, response: listSchema(RoleViewSchema, 'RoleList') }, async (ctx, { query }) => ({ data: await assignableRoles(ctx, query) }));

  r.get('/users', { summary: 'List users the caller reaches', query: UserListQuery, response: UserPageSchema }, (ctx, { query }) => listUsers(ctx, query));
  r.post('/users/invite', { summary: 'Invite someone by email: answers the user and a one-time invite link', body: InviteUserSchema, status: 201, response: InviteResultSchema }, (ctx, { body }) =>
    inviteUser(ctx, body),
  );
  r.post('/users/resend-invite', { summary: 'A new invite link for a user who has not accepted (the old one stops working)', body: ResendInviteSchema, response: InviteResultSchema }, (ctx, { body }) =>
    resendInvite(ctx, body),
  );
  r.get('/users/:id', { summary: 'Get a user', params: user, response: UserViewSchema }, (ctx, { params }) => getUser(ctx, params.id));
  r.patch('/users/:id', { summary: "Update a user's name, status or reach", params: user, body: UpdateUserSchema, response: UserViewSchema }, (ctx, { params, body }) => updateUser(ctx, params.id, body));
  r.delete('/users/:id', { summary: 'Remove the memberships the caller manages (and the account with its last one)', params: user, status: 204 }, (ctx, { params }) =>
    deleteUser(ctx, params.id),
  );
  r.post('/users/:id/role', { summary: "Change a user's role (needs an MFA session)", params: user, body: SetUserRoleSchema, response: UserViewSchema }, (ctx, { params, body }) =>
    setUserRole(ctx, params.id, body),
  );
  return r;
}
