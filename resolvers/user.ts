import { Arg, Args, ArgsType, Ctx, Field, ID, InputType, Int, Mutation, ObjectType, Query, Resolver } from 'type-graphql';
import type { GraphqlContext } from '../src/graphql/context.js';
import type { AuthSession } from '../src/services/auth.js';
import { assignableRoles } from '../src/services/roles.js';
import {
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
  type InvitationView,
  type InviteResult,
  type MeView,
  type MembershipView,
} from '../src/services/users.js';
import { RoleObject } from './role.js';
import { PageArgs, PageOf } from './shared.js';
import { UserObject } from './user-types.js';

@ObjectType('Membership')
class MembershipObject implements MembershipView {
  @Field(() => ID)
  id!: string;

  @Field(() => String, { description: 'system, partner or organization' })
  scope!: MembershipView['scope'];

  @Field(() => ID, { nullable: true })
  partnerId!: string | null;

  @Field(() => ID, { nullable: true })
  orgId!: string | null;

  @Field(() => ID)
  roleId!: string;

  @Field(() => String)
  roleName!: string;

  @Field(() => String, { description: 'partner memberships: all or selected organizations' })
  orgAccess!: MembershipView['orgAccess'];

  @Field(() => [ID])
  orgIds!: string[];

  @Field(() => [ID], { description: 'organization memberships: limited to these sites (empty: every site)' })
  siteIds!: string[];

  @Field(() => String, { description: 'active, or pending: an invitation not accepted yet' })
  status!: MembershipView['status'];
}

@ObjectType('Me', { description: 'The caller (REST `GET /users/me`).' })
class MeObject extends UserObject implements MeView {
  @Field(() => [String], { description: 'the catalog permissions of the current session, wildcards expanded' })
  permissions!: string[];

  @Field(() => [MembershipObject])
  memberships!: MembershipObject[];
}

const UserPage = PageOf(UserObject, 'UserPage');

@ObjectType('InviteResult')
class InviteResultObject implements InviteResult {
  @Field(() => UserObject)
  user!: UserObject;

  @Field(() => String, {
    nullable: true,
    description: 'one-time link: sets a new account\'s password, or accepts the membership with an existing account\'s own password',
  })
  inviteUrl!: string | null;
}

@ObjectType('Invitation', { description: 'A membership another organization or partner offered to the caller, not accepted yet.' })
class InvitationObject implements InvitationView {
  @Field(() => ID, { description: 'the pending membership: accept or decline it by this id' })
  id!: string;

  @Field(() => String, { description: 'partner or organization' })
  scope!: InvitationView['scope'];

  @Field(() => ID, { nullable: true })
  partnerId!: string | null;

  @Field(() => ID, { nullable: true })
  orgId!: string | null;

  @Field(() => String, { description: "the organization's or partner's name" })
  tenantName!: string;

  @Field(() => ID)
  roleId!: string;

  @Field(() => String)
  roleName!: string;

  @Field(() => String, { description: 'ISO 8601' })
  invitedAt!: string;

  @Field(() => String, { nullable: true, description: 'ISO 8601' })
  expiresAt!: string | null;
}

@ObjectType('AcceptedInvitation', { description: 'The session that accepting an invitation starts.' })
class AcceptedInvitationObject implements AuthSession {
  @Field(() => String)
  accessToken!: string;

  @Field(() => String)
  refreshToken!: string;

  @Field(() => Int, { description: 'access-token lifetime in seconds' })
  expiresIn!: number;

  @Field(() => UserObject)
  user!: UserObject;
}

@ArgsType()
class UserListArgs extends PageArgs {
  @Field(() => ID, { nullable: true })
  orgId?: string;

  @Field(() => String, { nullable: true, description: 'active, invited or disabled' })
  status?: string;

  @Field(() => String, { nullable: true, description: 'part of the name or email' })
  search?: string;

  @Field(() => ID, { nullable: true })
  roleId?: string;
}

@InputType()
class InviteUserInput {
  @Field(() => String)
  email!: string;

  @Field(() => String)
  name!: string;

  @Field(() => ID)
  roleId!: string;

  @Field(() => ID, { nullable: true, description: 'partner callers leave it out to invite a partner-level member' })
  orgId?: string;
}

@InputType()
class UpdateUserInput {
  @Field(() => String, { nullable: true })
  name?: string;

  @Field(() => String, { nullable: true, description: 'active or disabled' })
  status?: string;

  @Field(() => String, { nullable: true, description: 'partner members: all or selected' })
  orgAccess?: string;

  @Field(() => [ID], { nullable: true })
  orgIds?: string[];

  @Field(() => [ID], { nullable: true })
  siteIds?: string[];
}

@InputType()
class UpdateMeInput {
  @Field(() => String)
  name!: string;
}

@InputType()
class AcceptInviteInput {
  @Field(() => String)
  token!: string;

  @Field(() => String, { description: "a new account's new password (12 to 256 characters), or an existing account's own password" })
  password!: string;

  @Field(() => String, { nullable: true, description: 'existing accounts with MFA: a TOTP or recovery code' })
  code?: string;
}

@ArgsType()
class AssignableRolesArgs {
  @Field(() => ID, { nullable: true, description: 'only roles that apply in this organization' })
  orgId?: string;
}

@Resolver()
export class UserResolver {
  @Query(() => MeObject)
  me(@Ctx() { ctx }: GraphqlContext) {
    return getMe(ctx);
  }

  @Query(() => UserPage, { description: 'Users with a membership the caller reaches.' })
  users(@Ctx() { ctx }: GraphqlContext, @Args(() => UserListArgs) args: UserListArgs) {
    return listUsers(ctx, args);
  }

  @Query(() => UserObject)
  user(@Ctx() { ctx }: GraphqlContext, @Arg('id', () => ID) id: string) {
    return getUser(ctx, id);
  }

  @Query(() => [RoleObject], { description: 'Roles the caller may assign (REST `GET /users/roles`).' })
  assignableRoles(@Ctx() { ctx }: GraphqlContext, @Args(() => AssignableRolesArgs) args: AssignableRolesArgs) {
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

  @Mutation(() => AcceptedInvitationObject, { description: 'Public: accepts an invitation link and starts a session.' })
  acceptInvite(@Ctx() { ctx }: GraphqlContext, @Arg('input', () => AcceptInviteInput) input: AcceptInviteInput) {
    return acceptInvite(ctx, input);
  }
}
