import { ID } from 'type-graphql';
import { arg, args, id, input, mutation, operations, pageArgs, query } from '../src/graphql/contract.js';
import { AuthSessionSchema } from '../src/services/identity/auth.js';
import { AssignableRolesQuery, RoleViewSchema, assignableRoles } from '../src/services/identity/roles.js';
import { UserPageSchema, UserViewSchema } from '../src/services/identity/user-view.js';
import {
  MeViewSchema,
  MembershipViewSchema,
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
  InvitationViewSchema,
  InviteResultSchema,
  InviteUserSchema,
  acceptInvite,
  acceptMyInvitation,
  declineMyInvitation,
  inviteUser,
  listMyInvitations,
  resendInvite,
} from '../src/services/identity/invitations.js';
import { pageConnectionOf, paged } from './shared.js';

export const UserResolver = operations({
  me: query(MeViewSchema, [], getMe, { description: 'The caller: profile, current permissions and memberships (REST `GET /users/me`).' }),
  users: query(pageConnectionOf(UserPageSchema), [pageArgs('UserListArgs', UserListQuery)], paged(listUsers), {
    description: 'Users with a membership the caller reaches.',
  }),
  user: query(UserViewSchema, [id], getUser, { description: 'One user, seen through a membership the caller reaches.' }),
  assignableRoles: query([RoleViewSchema], [args('AssignableRolesArgs', AssignableRolesQuery)], assignableRoles, {
    description: 'Roles the caller may assign (REST `GET /users/roles`).',
  }),
  inviteUser: mutation(InviteResultSchema, [input('InviteUserInput', InviteUserSchema)], inviteUser, { description: 'Invites someone by email into the caller’s organization or partner with a role.' }),
  resendInvite: mutation(InviteResultSchema, [arg('userId', ID, { description: 'The invited user.' })], (ctx, userId) => resendInvite(ctx, { userId }), {
    description: 'A new invite link; the previous one stops working.',
  }),
  updateUser: mutation(UserViewSchema, [id, input('UpdateUserInput', UpdateUserSchema)], updateUser, { description: 'Renames, enables or disables a user, or changes what their membership reaches.' }),
  deleteUser: mutation(Boolean, [id], deleteUser, { description: 'Removes the memberships the caller manages, and the account with its last one.' }),
  setUserRole: mutation(UserViewSchema, [id, arg('roleId', ID, { description: 'A role the caller may assign.' })], (ctx, user, roleId) => setUserRole(ctx, user, { roleId }), { description: 'Needs an MFA session.' }),
  updateMe: mutation(UserViewSchema, [input('UpdateMeInput', UpdateMeSchema)], updateMe, { description: 'Changes the caller’s own profile.' }),
  myInvitations: query([InvitationViewSchema], [], async (ctx) => (await listMyInvitations(ctx)).data, {
    description: "The caller's pending invitations (REST `GET /users/me/invitations`).",
  }),
  acceptInvitation: mutation(
    MembershipViewSchema,
    [id, arg('currentPassword', String, { nullable: true, description: 'The account’s password, when the session signed in through SSO.' })],
    (ctx, invitation, currentPassword) => acceptMyInvitation(ctx, invitation, currentPassword ? { currentPassword } : {}),
    { description: 'Accepts a pending invitation; an SSO session also needs currentPassword.' },
  ),
  declineInvitation: mutation(Boolean, [id], declineMyInvitation, { description: 'Declines a pending invitation.' }),
  acceptInvite: mutation(AuthSessionSchema, [input('AcceptInviteInput', AcceptInviteSchema)], acceptInvite, {
    description: 'Public: accepts an invitation link and starts a session.',
  }),
});
