import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import * as auth from '../src/services/identity/auth.js';
import * as roles from '../src/services/identity/roles.js';
import * as userView from '../src/services/identity/user-view.js';
import * as users from '../src/services/identity/users.js';
import * as invitations from '../src/services/identity/invitations.js';
import { pageConnectionOf, paged } from './shared.js';

export const UserResolver = operations({
  me: query(users.MeViewSchema, [], users.getMe, { description: 'The caller: profile, current permissions and memberships (REST `GET /users/me`).' }),
  users: query(pageConnectionOf(userView.UserPageSchema), [pageArgs('UserListArgs', users.UserListQuery)], paged(users.listUsers), {
    description: 'Users with a membership the caller reaches.',
  }),
  user: query(userView.UserViewSchema, [id], users.getUser, { description: 'One user, seen through a membership the caller reaches.' }),
  assignableRoles: query([roles.RoleViewSchema], [args('AssignableRolesArgs', roles.AssignableRolesQuery)], roles.assignableRoles, {
    description: 'Roles the caller may assign (REST `GET /users/roles`).',
  }),
  inviteUser: mutation(invitations.InviteResultSchema, [input('InviteUserInput', invitations.InviteUserSchema)], invitations.inviteUser, { description: 'Invites someone by email into the caller’s organization or partner with a role.' }),
  resendInvite: mutation(invitations.InviteResultSchema, [arg('userId', ID, { description: 'The invited user.' })], (ctx, userId) => invitations.resendInvite(ctx, { userId }), {
    description: 'A new invite link; the previous one stops working.',
  }),
  updateUser: mutation(userView.UserViewSchema, [id, input('UpdateUserInput', users.UpdateUserSchema)], users.updateUser, { description: 'Renames, enables or disables a user, or changes what their membership reaches.' }),
  deleteUser: mutation(Boolean, [id], users.deleteUser, { description: 'Removes the memberships the caller manages, and the account with its last one.' }),
  setUserRole: mutation(userView.UserViewSchema, [id, arg('roleId', ID, { description: 'A role the caller may assign.' })], (ctx, user, roleId) => users.setUserRole(ctx, user, { roleId }), { description: 'Needs an MFA session.' }),
  updateMe: mutation(userView.UserViewSchema, [input('UpdateMeInput', users.UpdateMeSchema)], users.updateMe, { description: 'Changes the caller’s own profile.' }),
  myInvitations: query([invitations.InvitationViewSchema], [], async (ctx) => (await invitations.listMyInvitations(ctx)).data, {
    description: "The caller's pending invitations (REST `GET /users/me/invitations`).",
  }),
  acceptInvitation: mutation(
    users.MembershipViewSchema,
    [id, arg('currentPassword', String, { nullable: true, description: 'The account’s password, when the session signed in through SSO.' })],
    (ctx, invitation, currentPassword) => invitations.acceptMyInvitation(ctx, invitation, currentPassword ? { currentPassword } : {}),
    { description: 'Accepts a pending invitation; an SSO session also needs currentPassword.' },
  ),
  declineInvitation: mutation(Boolean, [id], invitations.declineMyInvitation, { description: 'Declines a pending invitation.' }),
  acceptInvite: mutation(auth.AuthSessionSchema, [input('AcceptInviteInput', invitations.AcceptInviteSchema)], invitations.acceptInvite, {
    description: 'Public: accepts an invitation link and starts a session.',
  }),
});
