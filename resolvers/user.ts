import { Arg, Args, Ctx, ID, Mutation, Query, Resolver } from 'type-graphql';
import { argsType, inputType, objectType } from '../src/graphql/contract.js';
import type { GraphqlContext } from '../src/graphql/context.js';
import { pageSchema } from '../src/pagination.js';
import { AuthSessionSchema } from '../src/services/auth.js';
import { AssignableRolesQuery, assignableRoles, type AssignableRolesInput } from '../src/services/roles.js';
import { UserViewSchema } from '../src/services/user-view.js';
import {
  AcceptInviteSchema,
  InvitationViewSchema,
  InviteResultSchema,
  InviteUserSchema,
  MeViewSchema,
  MembershipViewSchema,
  UpdateMeSchema,
  UpdateUserSchema,
  UserListQuery,
  acceptInvite,
  acceptMyInvitation,
  declineMyInvitation,
  deleteUser,
  getMe,
  getUser,
  inviteUser,
  listMyInvitations,
  listUsers,
  resendInvite,
  setUserRole,
  updateMe,
  updateUser,
  type AcceptInviteInput,
  type InviteUserInput,
  type UpdateMeInput,
  type UpdateUserInput,
  type UserListInput,
} from '../src/services/users.js';
import { RoleObject } from './role.js';

const UserObject = objectType('User', UserViewSchema);
const MeObject = objectType('Me', MeViewSchema);
const MembershipObject = objectType('Membership', MembershipViewSchema);
const InvitationObject = objectType('Invitation', InvitationViewSchema);
const InviteResultObject = objectType('InviteResult', InviteResultSchema);
const AuthSessionObject = objectType('AuthSession', AuthSessionSchema);
const UserPage = objectType('UserPage', pageSchema(UserViewSchema, 'UserPage'));
const UserListArgs = argsType('UserListArgs', UserListQuery);
const AssignableRolesArgs = argsType('AssignableRolesArgs', AssignableRolesQuery);
const InviteUserInput = inputType('InviteUserInput', InviteUserSchema);
const UpdateUserInput = inputType('UpdateUserInput', UpdateUserSchema);
const UpdateMeInput = inputType('UpdateMeInput', UpdateMeSchema);
const AcceptInviteInput = inputType('AcceptInviteInput', AcceptInviteSchema);

@Resolver()
export class UserResolver {
  @Query(() => MeObject)
  me(@Ctx() { ctx }: GraphqlContext) {
    return getMe(ctx);
  }

  @Query(() => UserPage, { description: 'Users with a membership the caller reaches.' })
  users(@Ctx() { ctx }: GraphqlContext, @Args(() => UserListArgs) args: UserListInput) {
    return listUsers(ctx, args);
  }

  @Query(() => UserObject)
  user(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getUser(ctx, id);
  }

  @Query(() => [RoleObject], { description: 'Roles the caller may assign (REST `GET /users/roles`).' })
  assignableRoles(@Ctx() { ctx }: GraphqlContext, @Args(() => AssignableRolesArgs) args: AssignableRolesInput) {
    return assignableRoles(ctx, args);
  }

  @Mutation(() => InviteResultObject)
  inviteUser(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => InviteUserInput) input: InviteUserInput) {
    return inviteUser(ctx, input);
  }

  @Mutation(() => InviteResultObject, { description: 'A new invite link; the previous one stops working.' })
  resendInvite(@Ctx() { ctx }: GraphqlContext, @Arg('userId', () => ID) userId: string) {
    return resendInvite(ctx, { userId });
  }

  @Mutation(() => UserObject)
  updateUser(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('input', () => UpdateUserInput) input: UpdateUserInput) {
    return updateUser(ctx, id, input);
  }

  @Mutation(() => Boolean, { description: 'Removes the memberships the caller manages, and the account with its last one.' })
  async deleteUser(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await deleteUser(ctx, id);
    return true;
  }

  @Mutation(() => UserObject, { description: 'Needs an MFA session.' })
  setUserRole(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('roleId', () => ID) roleId: string) {
    return setUserRole(ctx, id, { roleId });
  }

  @Mutation(() => UserObject)
  updateMe(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => UpdateMeInput) input: UpdateMeInput) {
    return updateMe(ctx, input);
  }

  @Query(() => [InvitationObject], { description: "The caller's pending invitations (REST `GET /users/me/invitations`)." })
  async myInvitations(@Ctx() { ctx }: GraphqlContext) {
    return (await listMyInvitations(ctx)).data;
  }

  @Mutation(() => MembershipObject, { description: 'Accepts a pending invitation; an SSO session also needs currentPassword.' })
  acceptInvitation(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string, @Arg('currentPassword', () => String, { nullable: true }) currentPassword?: string | null) {
    return acceptMyInvitation(ctx, id, currentPassword ? { currentPassword } : {});
  }

  @Mutation(() => Boolean, { description: 'Declines a pending invitation.' })
  async declineInvitation(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string): Promise<boolean> {
    await declineMyInvitation(ctx, id);
    return true;
  }

  @Mutation(() => AuthSessionObject, { description: 'Public: accepts an invitation link and starts a session.' })
  acceptInvite(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => AcceptInviteInput) input: AcceptInviteInput) {
    return acceptInvite(ctx, input);
  }
}
